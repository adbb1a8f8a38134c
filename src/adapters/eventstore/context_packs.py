"""Command handling of released packs and their replays: one stream per (workspace, replay id)."""

from __future__ import annotations

from context_service.adapters.eventstore.application import (
    Clock,
    Outcome,
    StreamApplication,
    utc_now,
)
from context_service.adapters.eventstore.store import EventStore
from context_service.domain.context_pack.commands import PackCommand
from context_service.domain.context_pack.decide import decide
from context_service.domain.context_pack.state import ReplayState, evolve, replay_stream


class ContextPackApplication(StreamApplication[ReplayState]):
    def __init__(self, store: EventStore, clock: Clock = utc_now) -> None:
        super().__init__(store, "context_pack", ReplayState, evolve, decide, clock)

    def load(self, workspace: str, replay_id: str) -> tuple[int, ReplayState]:
        return self.load_stream(replay_stream(workspace, replay_id))

    def execute(self, workspace: str, replay_id: str,
                command: PackCommand) -> Outcome[ReplayState]:
        return self.execute_on(replay_stream(workspace, replay_id), command)
