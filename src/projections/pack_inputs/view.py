"""The pack-input events (agent-context-api 7.3, 12.3) and the write interface of their view."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import msgspec

from context_service.domain.context.events import (
    AccessGranted,
    AccessRevoked,
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    QueryIndexPublished,
    RevisionPublished,
)
from context_service.domain.context_set.events import (
    ContextSetArchived,
    ContextSetCreated,
    ContextSetReplaced,
)
from context_service.domain.events import Event
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet

PACK_INPUTS: tuple[type[Event], ...] = (
    ContextCreated, ContextAdopted, ContextDeleted, AccessGranted, AccessRevoked,
    RevisionPublished, QueryIndexPublished, WorkspaceMemberSet, WorkspaceMemberRemoved,
    ContextSetCreated, ContextSetReplaced, ContextSetArchived)


class PackInput(msgspec.Struct, frozen=True, kw_only=True):
    """One pack-input event of a namespace; a published index without its records."""

    namespace: str
    position: int
    recorded_at: datetime
    kind: str  # the stream's aggregate kind
    key: str  # the stream's key inside the namespace
    event: Event


class PackInputsView(Protocol):
    def add(self, inputs: Sequence[PackInput]) -> None: ...


def slim(event: Event) -> Event:
    """The event as the pack inputs keep it: an index publication without its records (the
    corpus reads them from the log by the publication's position)."""
    if isinstance(event, QueryIndexPublished) and event.records:
        return msgspec.structs.replace(event, records=())
    return event
