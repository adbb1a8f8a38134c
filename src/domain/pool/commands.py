"""Imperatives for sandbox pools."""

from __future__ import annotations

import msgspec

from context_service.domain.cluster import Runtime
from context_service.domain.pool.events import Resource, Workspace


class PoolCommand(msgspec.Struct, frozen=True, kw_only=True):
    name: str


class RequestPool(PoolCommand, frozen=True):
    """A create request as decoded; ``runtime`` and ``claim`` are resolved against the cluster
    (spec 2.3 step 9) between validation and recording."""

    replicas: int | None
    sandbox_profile: str = ""
    warm_pool_ref: str = ""
    size: str = ""
    access_mode: str = ""
    storage_class: str = ""
    claim_name: str = ""
    read_only: bool | None = None
    namespace: str = ""
    runtime: Runtime | None = None
    claim: Workspace | None = None


class ObservePool(PoolCommand, frozen=True):
    ready_replicas: int
    resources: tuple[Resource, ...]
    workspace: Workspace | None = None


class ReleasePool(PoolCommand, frozen=True):
    pass
