"""revision_history: every appended revision of a context, in publication order."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol

from context_service.domain.context.events import (
    ContextAdopted,
    ContextCreated,
    Revision,
    RevisionPublished,
)
from context_service.domain.events import Event
from context_service.domain.stream import Recorded

RevisionRow = tuple[uuid.UUID, int, int, Revision]  # stream, position, seq, revision


class RevisionView(Protocol):
    def append(self, rows: list[RevisionRow]) -> None: ...


def appended_revisions(event: Event) -> tuple[Revision, ...]:
    """The revisions an event appends (a publish of a new id, a clone, an adoption)."""
    if isinstance(event, RevisionPublished) and event.appended:
        return (event.revision,)
    if isinstance(event, ContextCreated) and event.revision is not None:
        return (event.revision,)
    if isinstance(event, ContextAdopted):
        return event.revisions
    return ()


class RevisionHistory:
    name: str = "revision_history"
    tables: tuple[str, ...] = ("revision_history",)

    def apply(self, view: RevisionView, batch: Sequence[Recorded]) -> None:
        rows: list[RevisionRow] = []
        for r in batch:
            for seq, revision in enumerate(appended_revisions(r.event)):
                rows.append((r.stream.id, r.position, seq, revision))
        if rows:
            view.append(rows)
