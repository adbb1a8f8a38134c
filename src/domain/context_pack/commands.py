"""Imperatives for a replay stream: release a pack once, record a replay run."""

from __future__ import annotations

from datetime import timedelta

import msgspec

from context_service.domain.context_pack.events import ContextPackReleased, ContextPackReplayed


class ReleasePack(msgspec.Struct, frozen=True, kw_only=True):
    """Record ``release`` unless its replay id was recorded already. ``expires_at`` of the
    release is ignored: ``decide`` sets it to the time of recording + ``retention``."""

    release: ContextPackReleased
    retention: timedelta


class RecordReplay(msgspec.Struct, frozen=True, kw_only=True):
    run: ContextPackReplayed


PackCommand = ReleasePack | RecordReplay
