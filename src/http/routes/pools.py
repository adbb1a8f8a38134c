"""Sandbox pools (spec 1.12) and storage classes (spec 1.4). No subject header is read here."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import msgspec
from litestar import Request, Response, delete, get, post
from litestar.params import FromPath, JSONBody

from context_service.contract.pools import (
    CreatePoolRequest,
    Pool,
    PoolList,
    PoolWorkspaceRequest,
    StorageClassList,
)
from context_service.domain.cluster import ClusterError
from context_service.domain.errors import PoolExistsError, PoolNotFoundError
from context_service.domain.pool.commands import ReleasePool, RequestPool
from context_service.domain.pool.references import (
    ensure_name_free,
    ensure_no_context_claims,
    resolve,
)
from context_service.domain.pool.state import PoolState
from context_service.domain.pool.validation import validate_pool
from context_service.http.common import (
    CATALOG,
    json,
    no_content,
    services,
    threaded,
    wait_for_views,
)
from context_service.http.errors import HttpError
from context_service.http.ports import PoolServices
from context_service.http.refusals import refusals
from context_service.http.sent import NOTHING, Sent, SentBody

POOLS = "/v1/sandbox-pools"
ABSENT = "no such pool, or it was released"


def _pools(request: Request[Any, Any, Any]) -> PoolServices:
    found = services(request).pools
    if found is None:
        raise HttpError(500, "internal_error", "sandbox pools need Kubernetes (CS_KUBE is off)")
    return found


def _cluster(pools: PoolServices) -> Any:
    if pools.cluster is None:
        raise HttpError(500, "internal_error", "Kubernetes is not configured (CS_KUBE is off)")
    return pools.cluster


def render(state: PoolState) -> dict[str, Any]:
    ws = state.observed_workspace if state.strategy == "existing-claim" and \
        state.observed_workspace else state.workspace
    workspace: dict[str, Any] = {"size": ws.size, "accessMode": ws.access_mode}
    if ws.storage_class:
        workspace["storageClass"] = ws.storage_class
    if state.strategy == "existing-claim":
        workspace["claimName"] = state.workspace.claim_name
        workspace["readOnly"] = bool(state.workspace.read_only)
    out: dict[str, Any] = {"name": state.name, "status": state.status,
                           "replicas": state.replicas, "readyReplicas": state.ready_replicas,
                           "sandboxSelector": state.selector}
    if state.sandbox_profile:
        out["sandboxProfile"] = state.sandbox_profile
    if state.warm_pool_ref:
        out["warmPoolRef"] = state.warm_pool_ref
    out["workspace"] = workspace
    if state.resources:
        out["resources"] = [{"kind": r.kind, "name": r.name, "status": r.status}
                            for r in state.resources]
    return out


def _live_context(request: Request[Any, Any, Any], namespace: str) -> Callable[[str], bool]:
    """Whether a live context of ``namespace`` has the name, read from the catalog once it has
    caught up with the log (waited for once, at the first name asked), so a context recorded
    just before counts."""
    reads = services(request).reads
    caught_up = cache(lambda: wait_for_views(request, CATALOG))

    def live(name: str) -> bool:
        caught_up()
        return reads.get(namespace, name) is not None

    return live


@post(POOLS, status_code=201, dto=SentBody,
      responses=refusals({409: "the name is taken, or objects of the pool exist already"}))
@threaded
def create_pool(request: Request[Any, Any, Any],
                data: JSONBody[Sent[CreatePoolRequest]] = NOTHING) -> Response[Pool]:
    """Create an allocation: sandboxes with a declared workspace topology."""
    pools = _pools(request)
    req = data.decode(refuse_nul=True)
    ws = req.workspace or PoolWorkspaceRequest()
    command = RequestPool(
        name=req.name or "", replicas=req.replicas, sandbox_profile=req.sandbox_profile or "",
        warm_pool_ref=req.warm_pool_ref or "", size=ws.size or "",
        access_mode=ws.access_mode or "", storage_class=ws.storage_class or "",
        claim_name=ws.claim_name or "", read_only=ws.read_only, namespace=pools.namespace)
    strategy = validate_pool(command)
    cluster = _cluster(pools)
    try:
        runtime, claim = resolve(cluster, pools.namespace, command, strategy,
                                 pools.sandbox_image, pools.sandbox_service_account,
                                 recorded=lambda pool: pools.pools.load(pool)[1])
        _, current = pools.pools.load(command.name)
        if current.live:
            raise PoolExistsError()
        ensure_name_free(cluster, pools.namespace, command.name, strategy, command.replicas or 0)
        ensure_no_context_claims(_live_context(request, pools.namespace), command.name,
                                 strategy, command.replicas or 0)
    except ClusterError as exc:
        raise HttpError(500, "internal_error", f"kubernetes: {exc}") from exc
    command = msgspec.structs.replace(command, runtime=runtime, claim=claim)
    outcome = pools.pools.execute(command)
    return json(render(outcome.state), 201, outcome.position)


@get(POOLS)
@threaded
def list_pools(request: Request[Any, Any, Any]) -> Response[PoolList]:
    """List every live allocation, sorted by name."""
    pools = _pools(request)
    wait_for_views(request, ("pool_status",))
    return json({"items": [render(s) for s in pools.reads.list()]})


@get(POOLS + "/{name:str}", responses=refusals({404: ABSENT}))
@threaded
def get_pool(request: Request[Any, Any, Any], name: FromPath[str]) -> Response[Pool]:
    """Read an allocation's status."""
    pools = _pools(request)
    wait_for_views(request, ("pool_status",))
    # a name holding U+0000 was never recorded (PostgreSQL text cannot even hold it)
    state = None if "\x00" in name else pools.reads.get(name)
    if state is None:
        raise PoolNotFoundError()
    return json(render(state))


@delete(POOLS + "/{name:str}", status_code=204, responses=refusals({404: ABSENT}))
@threaded
def release_pool(request: Request[Any, Any, Any], name: FromPath[str]) -> Response[None]:
    """Release an allocation; the reconciler deletes its objects per strategy."""
    pools = _pools(request)
    outcome = pools.pools.execute(ReleasePool(name=name))
    return no_content(outcome.position)


@get("/v1/storage-classes")
@threaded
def storage_classes(request: Request[Any, Any, Any]) -> Response[StorageClassList]:
    """The cluster's StorageClasses as a stable view, sorted by name."""
    cluster = _cluster(_pools(request))
    try:
        classes = sorted(cluster.list_storage_classes(), key=lambda c: c.name)
    except ClusterError as exc:
        raise HttpError(500, "internal_error", f"kubernetes: {exc}") from exc
    return json({"items": [{"name": c.name, "default": c.default, "provisioner": c.provisioner,
                            "volumeBindingMode": c.volume_binding_mode,
                            "reclaimPolicy": c.reclaim_policy,
                            "allowVolumeExpansion": c.allow_volume_expansion} for c in classes]})


ROUTES = [create_pool, list_pools, get_pool, release_pool, storage_classes]
