"""A context stream folded in time linear in its events.

``evolve`` returns a new state for every event, copying the grants, the declared consumers and
the revisions into a new tuple each time (and sorting the grants): a fold of a stream holding
20,000 grants cost 21 s of CPU, and every fold from the log (a context or a list ``asOf`` a
point, a namespace at a position for packs) paid it again. ``Folding`` keeps those three in
mutable builders, hands every other event to ``evolve`` on a state whose three fields are empty,
and builds the tuples once, when the state is asked for. The state it gives is the one
``evolve`` would (``tests`` fold random streams both ways).
"""

from __future__ import annotations

import msgspec

from context_service.domain.context.events import (
    AccessGranted,
    AccessRevoked,
    Consumer,
    ConsumerAttached,
    ConsumerDetached,
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    Grant,
    Revision,
    RevisionPublished,
)
from context_service.domain.context.state import ContextState, evolve
from context_service.domain.events import Event, Subject

_ConsumerKey = tuple[Subject, str, str]


class Folding:
    """``evolve`` over one stream's events, one ``apply`` at a time."""

    def __init__(self, state: ContextState | None = None) -> None:
        self._grants: dict[Subject, Grant] = {}
        self._declared: dict[_ConsumerKey, Consumer] = {}  # in attach order
        self._revisions: list[Revision] = []
        self._partial = ContextState()
        # a state the builders cannot hold as it is (an adopted claim's annotations naming a
        # subject twice): folded with ``evolve`` itself until the next creation or deletion
        self._plain: ContextState | None = None
        self._built: ContextState | None = None
        self._restart(state or ContextState())

    @property
    def partial(self) -> ContextState:
        """The state with its grants, declared consumers and revisions left empty: every other
        field is current, at no cost."""
        return self._plain or self._partial

    @property
    def state(self) -> ContextState:
        """The state ``evolve`` would have folded (built once per change)."""
        if self._plain is not None:
            return self._plain
        if self._built is None:
            self._built = msgspec.structs.replace(
                self._partial,
                grants=tuple(sorted(self._grants.values(), key=lambda g: g.subject.key)),
                declared=tuple(self._declared.values()), revisions=tuple(self._revisions))
        return self._built

    def apply(self, event: Event) -> None:
        self._built = None
        if isinstance(event, ContextCreated | ContextAdopted | ContextDeleted):
            self._restart(evolve(self.partial, event))
        elif self._plain is not None:
            self._plain = evolve(self._plain, event)
        else:
            self._build(event)

    def _build(self, event: Event) -> None:
        match event:
            case AccessGranted():
                self._grants.pop(event.grant.subject, None)
                self._grants[event.grant.subject] = event.grant
            case AccessRevoked():
                self._grants.pop(event.subject, None)
            case ConsumerAttached():
                c = event.consumer
                self._declared.pop((c.subject, c.kind, c.name), None)  # to the end, as evolve
                self._declared[(c.subject, c.kind, c.name)] = c
            case ConsumerDetached():
                self._declared.pop((event.subject, event.kind, event.name), None)
            case RevisionPublished():
                if event.appended:
                    self._revisions.append(event.revision)
                self._partial = msgspec.structs.replace(evolve(self._partial, event),
                                                        revisions=())
            case _:  # reads and writes none of the three
                self._partial = evolve(self._partial, event)

    def _restart(self, state: ContextState) -> None:
        """Start again from ``state`` (a creation, an adoption, a deletion, or a given one)."""
        self._grants = {g.subject: g for g in state.grants}
        self._declared = {(c.subject, c.kind, c.name): c for c in state.declared}
        self._revisions = list(state.revisions)
        self._partial = msgspec.structs.replace(state, grants=(), declared=(), revisions=())
        held = (len(self._grants) == len(state.grants)
                and len(self._declared) == len(state.declared)
                and list(state.grants) == sorted(state.grants, key=lambda g: g.subject.key))
        self._plain = None if held else state
