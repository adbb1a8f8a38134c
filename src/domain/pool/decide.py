"""``decide`` for sandbox pools: events or a ``DomainError``; pure."""

from __future__ import annotations

from datetime import datetime

from context_service.domain.errors import DomainError, PoolExistsError, PoolNotFoundError
from context_service.domain.events import Event
from context_service.domain.pool.commands import ObservePool, PoolCommand, ReleasePool, RequestPool
from context_service.domain.pool.events import (
    SandboxPoolObserved,
    SandboxPoolReleased,
    SandboxPoolRequested,
    Workspace,
)
from context_service.domain.pool.state import PoolState
from context_service.domain.pool.validation import validate_pool
from context_service.domain.values import canonical_quantity

SYSTEM = "service:context-service"


def decide(command: PoolCommand, state: PoolState, now: datetime) -> list[Event]:
    match command:
        case RequestPool():
            strategy = validate_pool(command)
            if state.live:
                raise PoolExistsError()
            return [SandboxPoolRequested(
                at=now, actor=SYSTEM, name=command.name, replicas=command.replicas or 0,
                strategy=strategy, workspace=_workspace(command, strategy),
                sandbox_profile=command.sandbox_profile, warm_pool_ref=command.warm_pool_ref,
                runtime=command.runtime, namespace=command.namespace)]
        case ObservePool():
            if not state.live:
                return []
            if (command.ready_replicas == state.ready_replicas
                    and command.resources == state.resources
                    and (command.workspace is None
                         or command.workspace == state.observed_workspace)):
                return []
            return [SandboxPoolObserved(at=now, actor=SYSTEM,
                                        ready_replicas=command.ready_replicas,
                                        resources=command.resources,
                                        workspace=command.workspace)]
        case ReleasePool():
            if not state.live:
                raise PoolNotFoundError()
            return [SandboxPoolReleased(at=now, actor=SYSTEM)]
    raise DomainError(f"unknown command {type(command).__name__}")


def _workspace(r: RequestPool, strategy: str) -> Workspace:
    if strategy == "warm-pool":
        return Workspace()
    if strategy == "existing-claim":
        claim = r.claim or Workspace()
        return Workspace(size=claim.size, access_mode=claim.access_mode,
                         storage_class=claim.storage_class, claim_name=r.claim_name,
                         read_only=r.read_only)
    return Workspace(size=canonical_quantity(r.size), access_mode=r.access_mode,
                     storage_class=r.storage_class)
