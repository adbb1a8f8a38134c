"""The objects the cluster should hold for one recorded context or pool (spec 6.3, 6.7).

Derived from the folded aggregate state alone, so the same log always asks for the same objects
under the same deterministic names.
"""

from __future__ import annotations

import msgspec

from context_service.domain.cluster import (
    ContextClaim,
    PoolSandbox,
    PoolSandboxClaim,
    WorkspaceClaim,
    sandbox_claim_name,
    sandbox_name,
    snapshot_object_name,
    workspace_claim_name,
)
from context_service.domain.context.events import Grant
from context_service.domain.context.state import ContextState
from context_service.domain.pool.state import PoolState
from context_service.domain.values import format_timestamp

GRANTS_ANNOTATION = "context.rossoctl.io/access-grants"
REVISION_ANNOTATION = "context.rossoctl.io/current-revision"
RETENTION_ANNOTATION = "context.rossoctl.io/snapshot-retention"
SOURCE_CONTEXT_ANNOTATION = "context.rossoctl.io/source-context"
SOURCE_SNAPSHOT_ANNOTATION = "context.rossoctl.io/source-snapshot"
SOURCE_REVISION_ANNOTATION = "context.rossoctl.io/source-revision"
DIRECT_STRATEGIES = ("dedicated", "shared", "existing-claim")

_json = msgspec.json.Encoder()


class PoolObjectsWanted(msgspec.Struct, frozen=True, kw_only=True):
    """What a live pool needs, keyed by object name."""

    claims: dict[str, WorkspaceClaim] = {}
    sandboxes: dict[str, PoolSandbox] = {}
    sandbox_claims: dict[str, PoolSandboxClaim] = {}


def grants_json(grants: tuple[Grant, ...]) -> str:
    """The access-grants annotation: the grants as the API returns them (spec 3.5), compact."""
    return _json.encode([
        {"subject": {"kind": g.subject.kind, "name": g.subject.name},
         "permissions": list(g.permissions), "createdAt": format_timestamp(g.created_at)}
        for g in grants]).decode()


def retention_json(keep_last: int, max_age: str) -> str:
    """``{"keepLast":n,"maxAge":"168h"}`` without zero or empty fields; "" for no policy."""
    policy: dict[str, int | str] = {}
    if keep_last:
        policy["keepLast"] = keep_last
    if max_age:
        policy["maxAge"] = max_age
    return _json.encode(policy).decode() if policy else ""


def context_claim(state: ContextState) -> ContextClaim:
    """The PVC of a live context, with the annotations the reconciler keeps current."""
    annotations = {GRANTS_ANNOTATION: grants_json(state.grants)}
    if state.current_revision:
        annotations[REVISION_ANNOTATION] = state.current_revision
    retention = retention_json(state.retention.keep_last, state.retention.max_age)
    if retention:
        annotations[RETENTION_ANNOTATION] = retention
    source = ""
    if state.clone_of is not None:
        clone = state.clone_of
        annotations[SOURCE_CONTEXT_ANNOTATION] = clone.context
        annotations[SOURCE_SNAPSHOT_ANNOTATION] = clone.snapshot
        annotations[SOURCE_REVISION_ANNOTATION] = clone.revision
        source = clone.object_name or snapshot_object_name(clone.context, clone.snapshot)
    return ContextClaim(
        namespace=state.namespace, context=state.name, type=state.type, size=state.storage.size,
        access_mode=state.storage.access_mode, storage_class=state.storage.storage_class,
        annotations=annotations, source_snapshot=source)


def claim_of_sandbox(pool: PoolState, index: int) -> str:
    """pvcName(i) of spec 6.7."""
    if pool.strategy == "existing-claim":
        return pool.workspace.claim_name
    return workspace_claim_name(pool.name, index if pool.strategy == "dedicated" else None)


def pool_objects(pool: PoolState, namespace: str) -> PoolObjectsWanted:
    """The objects a live pool consists of. Sandboxes need the runtime recorded with the pool;
    without one (nothing to copy), missing Sandboxes cannot be made and none are asked for."""
    n, name = pool.replicas, pool.name
    if pool.strategy == "warm-pool":
        wanted = {sandbox_claim_name(name, i): PoolSandboxClaim(
            namespace=namespace, pool=name, index=i, warm_pool=pool.warm_pool_ref)
            for i in range(n)}
        return PoolObjectsWanted(sandbox_claims=wanted)
    ws = pool.workspace
    claims: dict[str, WorkspaceClaim] = {}
    if pool.strategy in ("dedicated", "shared"):
        indexes: list[int | None] = list(range(n)) if pool.strategy == "dedicated" else [None]
        claims = {workspace_claim_name(name, i): WorkspaceClaim(
            namespace=namespace, pool=name, index=i, replicas=n, size=ws.size,
            access_mode=ws.access_mode, storage_class=ws.storage_class) for i in indexes}
    sandboxes: dict[str, PoolSandbox] = {}
    if pool.runtime is not None:
        existing = pool.strategy == "existing-claim"
        sandboxes = {sandbox_name(name, i): PoolSandbox(
            namespace=namespace, pool=name, index=i, replicas=n, claim=claim_of_sandbox(pool, i),
            runtime=pool.runtime, read_only=existing and ws.read_only is True,
            existing_claim=existing) for i in range(n)}
    return PoolObjectsWanted(claims=claims, sandboxes=sandboxes)
