"""The context_pack_replays view's ports: the projection's write side and the reads of the
replay routes and of deduplicated releases."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from context_service.domain.context_pack.events import ContextPackReleased, ContextPackReplayed


@dataclass(frozen=True, slots=True)
class ReplayRecord:
    """The release of one replay id, where it was recorded, and how many runs it has had."""

    workspace: str
    release: ContextPackReleased
    position: int  # of the ContextPackReleased event
    runs: int


@dataclass(frozen=True, slots=True)
class ReplayRun:
    stream_id: uuid.UUID
    position: int
    run: ContextPackReplayed


class ReplayView(Protocol):
    def add_releases(self, rows: list[tuple[uuid.UUID, str, int, ContextPackReleased]]) -> None:
        """Insert releases: (stream id, workspace, position, event); an existing one is kept."""

    def add_runs(self, runs: Iterable[ReplayRun]) -> None:
        """Record replay runs and count them on their release."""


class ReplayReads(Protocol):
    def get(self, workspace: str, replay_id: str) -> ReplayRecord | None:
        """The release of ``replay_id`` recorded in ``workspace``; None otherwise."""
