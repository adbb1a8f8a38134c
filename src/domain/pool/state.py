"""The state of one pool stream (keyed by name), folded with ``evolve``."""

from __future__ import annotations

import msgspec

from context_service.domain.cluster import Runtime
from context_service.domain.events import Event
from context_service.domain.pool.events import (
    Resource,
    SandboxPoolObserved,
    SandboxPoolReleased,
    SandboxPoolRequested,
    Workspace,
)

POOL_LABEL = "context.rossoctl.io/pool"


class PoolState(msgspec.Struct, frozen=True):
    live: bool = False
    released: bool = False  # released and not yet requested again
    name: str = ""
    namespace: str = ""
    replicas: int = 0
    strategy: str = ""
    workspace: Workspace = Workspace()
    sandbox_profile: str = ""
    warm_pool_ref: str = ""
    runtime: Runtime | None = None
    ready_replicas: int = 0
    resources: tuple[Resource, ...] = ()
    observed_workspace: Workspace | None = None
    adopted: bool = False

    @property
    def status(self) -> str:
        return "ready" if self.ready_replicas == self.replicas else "provisioning"

    @property
    def selector(self) -> str:
        return f"{POOL_LABEL}={self.name}"


def evolve(state: PoolState, event: Event) -> PoolState:
    match event:
        case SandboxPoolRequested():
            return PoolState(live=True, name=event.name, namespace=event.namespace,
                             replicas=event.replicas, strategy=event.strategy,
                             workspace=event.workspace, sandbox_profile=event.sandbox_profile,
                             warm_pool_ref=event.warm_pool_ref, runtime=event.runtime,
                             adopted=event.adopted)
        case SandboxPoolObserved():
            return msgspec.structs.replace(state, ready_replicas=event.ready_replicas,
                                           resources=event.resources,
                                           observed_workspace=event.workspace
                                           or state.observed_workspace)
        case SandboxPoolReleased():
            return msgspec.structs.replace(state, live=False, released=True)
    return state
