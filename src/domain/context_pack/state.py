"""The state of one replay stream (keyed by workspace and replay id), folded with ``evolve``."""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.context_pack.events import ContextPackReleased, ContextPackReplayed
from context_service.domain.events import Event
from context_service.domain.stream import StreamRef

KIND = "context_pack"


def replay_stream(workspace: str, replay_id: str) -> StreamRef:
    return StreamRef(KIND, workspace, replay_id)


class ReplayState(msgspec.Struct, frozen=True, kw_only=True):
    release: ContextPackReleased | None = None
    runs: int = 0
    last_run_at: datetime | None = None

    @property
    def released(self) -> bool:
        return self.release is not None

    def expired(self, now: datetime) -> bool:
        """Whether the replay routes refuse it (spec §8 step 8): now ≥ its ``expiresAt``."""
        return self.release is not None and now >= self.release.expires_at


def evolve(state: ReplayState, event: Event) -> ReplayState:
    match event:
        case ContextPackReleased():
            return ReplayState(release=event)
        case ContextPackReplayed():
            return msgspec.structs.replace(state, runs=state.runs + 1, last_run_at=event.at)
    return state


def fold(events: list[Event], state: ReplayState | None = None) -> ReplayState:
    state = state or ReplayState()
    for event in events:
        state = evolve(state, event)
    return state
