"""What the pack and replay routes need besides the agent pipeline: the pack-input and corpus
reads, the replay stream's write model and view, the log head and the replay retention."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from litestar import Request

from context_service.domain.context_pack.commands import PackCommand
from context_service.domain.context_pack.state import ReplayState
from context_service.domain.pack.model import CollectionAt, Corpus
from context_service.http.agent.errors import ApiError, unavailable
from context_service.http.common import services
from context_service.http.ports import Outcome
from context_service.projections.context_pack_replays.view import ReplayReads
from context_service.projections.pack_inputs.reads import CorpusLoading, PackPorts


class PackCommands(Protocol):
    def execute(self, workspace: str, replay_id: str,
                command: PackCommand) -> Outcome[ReplayState]: ...


@dataclass
class PackServices:
    ports: PackPorts | None  # None while the service has no pack-input reads configured
    commands: PackCommands
    replays: ReplayReads
    head: Callable[[], int]  # the log head position now
    retention: timedelta  # CS_REPLAY_RETENTION, applied to releases recorded from now on


    def wait_views(self) -> tuple[str, ...]:
        return self.ports.wait_views() if self.ports is not None else ()

    def configured(self) -> PackPorts:
        """The pack-input reads; a service without them answers 500 past the body rules."""
        if self.ports is None:
            raise ApiError(500, "INTERNAL_ERROR", "context packs are not configured")
        return self.ports


def pack_services(request: Request[Any, Any, Any]) -> PackServices:
    found = services(request).packs
    assert found is not None, "context packs are not configured"
    return found


def loaded_corpus(request: Request[Any, Any, Any], ports: PackPorts,
                  collections: Sequence[CollectionAt]) -> Corpus:
    """The corpus of ``collections``. An index still loading (after a start, a publication) is
    waited for as a view is (§1.7), no longer than the read wait, then ``503`` with
    ``Retry-After``; its load goes on for the next asker (decision 0052)."""
    until = time.monotonic() + services(request).read_wait_seconds
    try:
        return ports.corpus.corpus(collections, until=until)
    except CorpusLoading:
        raise unavailable() from None
