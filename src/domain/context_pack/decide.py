"""``decide`` for replay streams: events or a ``DomainError``; pure.

A release is content-addressed by its replay id, so a second release of the same id records
nothing and the caller answers the recorded ``expiresAt`` (spec §7.13). A replay run needs a
recorded release that has not expired (spec §8 steps 7-8).
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.context_pack.commands import RecordReplay, ReleasePack
from context_service.domain.context_pack.errors import ReplayExpiredError, ReplayNotFoundError
from context_service.domain.context_pack.state import ReplayState
from context_service.domain.errors import DomainError
from context_service.domain.events import Event
from context_service.domain.values import format_timestamp


def decide(command: object, state: ReplayState, now: datetime) -> list[Event]:
    match command:
        case ReleasePack():
            if state.released:
                return []
            recorded = msgspec.structs.replace(command.release, at=now,
                                               expires_at=now + command.retention)
            return [recorded]
        case RecordReplay():
            release = state.release
            if release is None or release.replay_id != command.run.replay_id:
                raise ReplayNotFoundError()
            if state.expired(now):
                raise ReplayExpiredError(release.replay_id, format_timestamp(release.expires_at))
            return [msgspec.structs.replace(command.run, at=now)]
    raise DomainError(f"unknown command {type(command).__name__}")
