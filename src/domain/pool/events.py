"""Facts about a sandbox pool (allocation). Names are stable stored topics."""

from __future__ import annotations

import msgspec

from context_service.domain.cluster import Runtime
from context_service.domain.events import Event


class Workspace(msgspec.Struct, frozen=True, kw_only=True):
    size: str = ""  # canonical form; "" for a warm-pool pool
    access_mode: str = ""
    storage_class: str = ""
    claim_name: str = ""  # existing-PVC strategy only
    read_only: bool | None = None  # existing-PVC strategy only


class Resource(msgspec.Struct, frozen=True):
    kind: str  # sandboxclaim | sandbox | pod | pvc
    name: str
    status: str


class SandboxPoolRequested(Event, frozen=True, tag="SandboxPoolRequested"):
    name: str
    replicas: int
    strategy: str  # dedicated | shared | existing-claim | warm-pool
    workspace: Workspace
    sandbox_profile: str = ""
    warm_pool_ref: str = ""
    runtime: Runtime | None = None  # None for the warm-pool strategy
    namespace: str = ""  # the service namespace the objects live in
    adopted: bool = False  # imported from existing objects: never rewritten by the reconciler


class SandboxPoolObserved(Event, frozen=True, tag="SandboxPoolObserved"):
    """What the reconciler last saw of the pool's objects (recorded only on change)."""

    ready_replicas: int
    resources: tuple[Resource, ...]
    workspace: Workspace | None = None  # the existing claim as observed


class SandboxPoolReleased(Event, frozen=True, tag="SandboxPoolReleased"):
    pass


POOL_EVENTS: tuple[type[Event], ...] = (SandboxPoolRequested, SandboxPoolObserved,
                                        SandboxPoolReleased)
