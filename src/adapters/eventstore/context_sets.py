"""Command handling of context sets: one stream per (namespace, set id)."""

from __future__ import annotations

from context_service.adapters.eventstore.application import (
    Clock,
    Outcome,
    StreamApplication,
    utc_now,
)
from context_service.adapters.eventstore.store import EventStore
from context_service.domain.context_set.commands import ContextSetCommand
from context_service.domain.context_set.decide import decide
from context_service.domain.context_set.state import ContextSetState, context_set_stream, evolve


class ContextSetApplication(StreamApplication[ContextSetState]):
    def __init__(self, store: EventStore, clock: Clock = utc_now) -> None:
        super().__init__(store, "context_set", ContextSetState, evolve, decide, clock)

    def load(self, namespace: str, set_id: str) -> tuple[int, ContextSetState]:
        return self.load_stream(context_set_stream(namespace, set_id))

    def active(self, namespace: str, set_id: str) -> bool:
        """Whether ``set_id`` names an active set of the namespace, read from the log itself
        (a set created or archived just before is seen at once)."""
        return self.load(namespace, set_id)[1].active

    def execute(self, namespace: str, command: ContextSetCommand) -> Outcome[ContextSetState]:
        return self.execute_on(context_set_stream(namespace, command.set_id), command)
