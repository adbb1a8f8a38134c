"""Context name availability (spec 1.5 create, step 4), against the cluster and recorded pools.

A PVC named ``context-<name>`` already in the namespace, managed or not, being deleted or not,
makes the name unavailable: the reconciler could neither create the claim nor safely take it.
So does a live pool recorded in the same namespace whose workspace claim
``<pool>-workspace[-<i>]`` is that name, though the reconciler has not created it yet: the claim
goes to one owner only, and the other would stay provisioning for good.
"""

from __future__ import annotations

from collections.abc import Callable

from context_service.domain.cluster import Cluster, context_claim_name, workspace_claim_name
from context_service.domain.errors import ContextExistsError
from context_service.domain.pool.state import PoolState

SHARED_SUFFIX = workspace_claim_name("", None)  # "-workspace"


def pool_workspaces_named(claim: str) -> list[tuple[str, int | None]]:
    """The (pool, index) whose workspace claim is named ``claim`` (index None: shared); at most
    one, as a shared name ends in the suffix and a dedicated one in a decimal index."""
    if claim.endswith(SHARED_SUFFIX):
        return _only(claim.removesuffix(SHARED_SUFFIX), None, claim)
    pool, _, index = claim.rpartition(SHARED_SUFFIX + "-")
    if not index.isdecimal() or not index.isascii():
        return []
    return _only(pool, int(index), claim)


def _only(pool: str, index: int | None, claim: str) -> list[tuple[str, int | None]]:
    # the name the pool would write, so "-workspace-01" or an empty pool name match nothing
    return [(pool, index)] if pool and workspace_claim_name(pool, index) == claim else []


def claims(pool: PoolState, index: int | None) -> bool:
    """Whether the live pool creates the workspace claim of ``index`` (spec 6.7)."""
    if index is None:
        return pool.strategy == "shared"
    return pool.strategy == "dedicated" and index < pool.replicas


def _no_pools(_name: str) -> PoolState | None:
    return None


class ClaimNameGuard:
    """``guard(namespace, name)`` raises ``ContextExistsError`` when the claim name is taken;
    a ``ClusterError`` (cluster unreachable) propagates and answers 500. ``live_pool`` reads one
    live pool of ``pool_namespace`` (``CS_NAMESPACE``) by name from the pool view."""

    def __init__(self, cluster: Cluster, pool_namespace: str = "",
                 live_pool: Callable[[str], PoolState | None] = _no_pools) -> None:
        self.cluster = cluster
        self.pool_namespace = pool_namespace
        self.live_pool = live_pool

    def __call__(self, namespace: str, name: str) -> None:
        claim = context_claim_name(name)
        if self.cluster.get_claim(namespace, claim) is not None:
            raise ContextExistsError()
        if namespace == self.pool_namespace and self._recorded_pool_claims(claim):
            raise ContextExistsError()

    def _recorded_pool_claims(self, claim: str) -> bool:
        for name, index in pool_workspaces_named(claim):
            pool = self.live_pool(name)
            if pool is not None and pool.live and claims(pool, index):
                return True
        return False
