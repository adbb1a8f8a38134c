"""What the HTTP layer needs from the rest of the service, as ports; bootstrap supplies them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from context_service.domain.cluster import Cluster
from context_service.domain.context.commands import Command
from context_service.domain.context.state import ContextState
from context_service.domain.events import Subject
from context_service.domain.pool.commands import PoolCommand
from context_service.domain.pool.state import PoolState
from context_service.projections.pool_status.projection import PoolReads
from context_service.projections.reads import Consistency, ContextReads


class CommandOutcome(Protocol):
    @property
    def state(self) -> ContextState: ...

    @property
    def position(self) -> int: ...


class ContextCommands(Protocol):
    def authorize(self, namespace: str, name: str, actor: Subject,
                  permission: str) -> ContextState: ...

    def execute(self, namespace: str, name: str, command: Command) -> CommandOutcome: ...

    async def authorize_async(self, namespace: str, name: str, actor: Subject,
                              permission: str) -> ContextState: ...

    async def execute_async(self, namespace: str, name: str,
                            command: Command) -> CommandOutcome: ...


class PoolCommands(Protocol):
    def load(self, name: str) -> tuple[int, PoolState]: ...

    def execute(self, command: PoolCommand) -> Any: ...


@dataclass
class PoolServices:
    """What the sandbox-pool and storage-class routes need; ``cluster`` is None without
    Kubernetes (those routes then answer 500)."""

    pools: PoolCommands
    reads: PoolReads
    cluster: Cluster | None
    namespace: str
    sandbox_image: str
    sandbox_service_account: str = ""


@dataclass
class Services:
    contexts: ContextCommands
    reads: ContextReads
    consistency: Consistency
    require_subject: bool = False
    read_wait_seconds: float = 5.0
    pools: PoolServices | None = None
    extra: dict[str, Any] = field(default_factory=dict)
