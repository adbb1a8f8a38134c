"""The event log as the relay and exports see it: envelope fields per stored event, a feed
read forward by position, and the relay's checkpoint in the tracking table."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from eventsourcing.persistence import Tracking
from eventsourcing.postgres import PostgresTrackingRecorder

from context_service.adapters.eventstore.mapper import event_data
from context_service.adapters.eventstore.store import EventStore
from context_service.domain.agent_credentials.events import REDACTED
from context_service.domain.stream import Recorded

_EVENT_NS = uuid.UUID("0d6f3f5e-3c1a-4f7b-9a55-0c2a8b0e7d21")


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One stored event with the fields of the published envelope."""

    position: int
    event_id: str
    name: str
    aggregate: str
    aggregate_id: str
    version: int
    timestamp: datetime
    namespace: str | None
    actor: str | None
    data: dict[str, Any]

    def as_json(self) -> dict[str, Any]:
        from context_service.domain.values import format_timestamp

        return {"position": self.position, "eventId": self.event_id, "name": self.name,
                "aggregate": self.aggregate, "aggregateId": self.aggregate_id,
                "version": self.version, "timestamp": format_timestamp(self.timestamp),
                "namespace": self.namespace, "actor": self.actor, "data": self.data}


def logged(recorded: Recorded) -> LoggedEvent:
    stream = recorded.stream
    data = event_data(recorded.event)
    data.pop("at", None)
    data.pop("actor", None)
    for secret in REDACTED.get(recorded.name, ()):  # never leaves the service (NATS, exports)
        data.pop(secret, None)
    return LoggedEvent(
        position=recorded.position,
        event_id=str(uuid.uuid5(_EVENT_NS, f"{stream.id}/{recorded.version}")),
        name=recorded.name, aggregate=stream.kind,
        aggregate_id=f"{stream.namespace}/{stream.key}" if stream.namespace else stream.key,
        version=recorded.version, timestamp=recorded.event.at,
        namespace=stream.namespace or None, actor=recorded.event.actor or None, data=data)


class LogFeed:
    """``EventFeed`` over the event store."""

    def __init__(self, store: EventStore) -> None:
        self.store = store

    def read(self, after: int, limit: int) -> Sequence[LoggedEvent]:
        return [logged(r) for r in self.store.read(after, limit)]

    def wait(self, after: int, timeout: float) -> None:
        self.store.wait_head(after, timeout)


class TrackedPosition:
    """``PositionStore`` in the tracking table, under the worker's name."""

    def __init__(self, tracking: PostgresTrackingRecorder, name: str) -> None:
        self.tracking = tracking
        self.name = name

    def load(self) -> int:
        return self.tracking.max_tracking_id(self.name) or 0

    def save(self, position: int) -> None:
        if position > self.load():
            self.tracking.insert_tracking(Tracking(self.name, position))
