"""What the pack and replay routes need besides the agent pipeline: the pack-input and corpus
reads, the replay stream's write model and view, the log head and the replay retention."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from litestar import Request

from context_service.domain.context_pack.commands import PackCommand
from context_service.domain.context_pack.state import ReplayState
from context_service.http.agent.errors import ApiError
from context_service.http.common import services
from context_service.http.ports import Outcome
from context_service.projections.context_pack_replays.view import ReplayReads
from context_service.projections.pack_inputs.reads import PackPorts


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
