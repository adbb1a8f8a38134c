"""The namespace at a position (agent-context-api 7.3): its pack-input events folded with the
write model's ``evolve`` (contexts and context sets), plus the position of the publication that
made each context's index current and the provenance of its current revision."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from context_service.domain.context.events import (
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    QueryIndexPublished,
    RevisionPublished,
    SourceRef,
)
from context_service.domain.context.folding import Folding
from context_service.domain.context_set.state import KIND as SET_KIND
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.context_set.state import evolve as evolve_set
from context_service.domain.events import Event
from context_service.domain.pack.model import CollectionAt, NamespaceAt
from context_service.projections.pack_inputs.view import PackInput

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _Context:
    """One context's pack inputs folded (``Folding``: linear in its grants and revisions, which
    a fold through ``evolve`` copied at every event); what a pack reads of it needs only the
    state's other fields."""

    __slots__ = ("folding", "publication", "sources")

    def __init__(self) -> None:
        self.folding = Folding()
        self.publication = 0
        self.sources: tuple[SourceRef, ...] = ()

    def apply(self, position: int, event: Event) -> None:
        self.folding.apply(event)
        match event:
            case ContextCreated():
                self.publication = 0
                self.sources = event.revision.sources if event.revision else ()
            case ContextAdopted():
                self.publication = 0
                self.sources = next((r.sources for r in event.revisions
                                     if r.id == event.current_revision), ())
            case ContextDeleted():
                self.publication, self.sources = 0, ()
            case RevisionPublished():
                self.sources = event.revision.sources
            case QueryIndexPublished() if self.folding.partial.live:
                self.publication = position

    def at(self, name: str) -> CollectionAt:
        state = self.folding.partial
        return CollectionAt(name=name, live=state.live, type=state.type,
                            current_revision=state.current_revision,
                            index_revision=state.index_revision or "",
                            publication=self.publication if state.live else 0,
                            sources=self.sources if state.live else ())


def fold(namespace: str, position: int, inputs: Iterable[PackInput]) -> NamespaceAt:
    """Fold ``inputs`` (the namespace's pack inputs up to ``position``, in log order)."""
    contexts: dict[str, _Context] = {}
    sets: dict[str, ContextSetState] = {}
    system_time = EPOCH
    for one in inputs:
        if one.position > position:
            break
        system_time = one.recorded_at
        if one.kind == "context":
            contexts.setdefault(one.key, _Context()).apply(one.position, one.event)
        elif one.kind == SET_KIND:
            sets[one.key] = evolve_set(sets.get(one.key, ContextSetState()), one.event)
    return NamespaceAt(
        namespace=namespace, position=position, system_time=system_time,
        collections={name: c.at(name) for name, c in sorted(contexts.items())},
        sets={s.id: s for _, s in sorted(sets.items()) if s.exists})
