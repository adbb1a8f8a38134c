"""The state of one context-set stream (keyed by namespace and set id), folded with ``evolve``.

A stream never starts over: an archived set keeps its id taken (spec 6.2).
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.context_set.events import (
    ContextSetArchived,
    ContextSetCreated,
    ContextSetReplaced,
    Definition,
    Instruction,
    RequiredEvidence,
    VerifiedAnswer,
)
from context_service.domain.events import Event
from context_service.domain.stream import StreamRef

KIND = "context_set"


def context_set_stream(namespace: str, set_id: str) -> StreamRef:
    return StreamRef(KIND, namespace, set_id)


class ContextSetState(msgspec.Struct, frozen=True, kw_only=True):
    exists: bool = False
    archived: bool = False
    id: str = ""
    version: int = 0
    name: str = ""
    description: str = ""
    collections: tuple[str, ...] = ()
    verified_answers: tuple[VerifiedAnswer, ...] = ()
    definitions: tuple[Definition, ...] = ()
    instructions: tuple[Instruction, ...] = ()
    required_evidence: tuple[RequiredEvidence, ...] = ()
    query_templates: tuple[str, ...] = ()
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def status(self) -> str:
        return "archived" if self.archived else "active"

    @property
    def active(self) -> bool:
        return self.exists and not self.archived


def evolve(state: ContextSetState, event: Event) -> ContextSetState:
    match event:
        case ContextSetCreated() | ContextSetReplaced():
            created = event.at if isinstance(event, ContextSetCreated) else state.created_at
            return ContextSetState(
                exists=True, id=event.id, version=event.version, name=event.name,
                description=event.description, collections=event.collections,
                verified_answers=event.verified_answers, definitions=event.definitions,
                instructions=event.instructions, required_evidence=event.required_evidence,
                query_templates=event.query_templates, created_at=created, updated_at=event.at)
        case ContextSetArchived():
            return msgspec.structs.replace(state, archived=True, updated_at=event.at)
    return state


def fold(events: list[Event], state: ContextSetState | None = None) -> ContextSetState:
    state = state or ContextSetState()
    for event in events:
        state = evolve(state, event)
    return state
