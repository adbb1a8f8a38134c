"""``plan(scope, observed)``: the actions that bring one namespace's recorded contexts and pools
to their desired objects. Pure and total.

Bounded reach (spec 6.2): only objects named after, and labelled for, a context or pool of the
scope are ever deleted; an existing claim, a SandboxWarmPool or a SandboxTemplate never is. An
object still being deleted is waited for, never recreated over. Applying a plan and planning
again yields nothing (once pending deletions have finished).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import msgspec

from context_service.domain.cluster import (
    KEPT_CURRENT_ANNOTATIONS,
    MANAGED_BY,
    MANAGER,
    NAME_LABEL,
    POOL_LABEL,
    TYPE_LABEL,
    ClaimInfo,
    ContextClaim,
    PodConsumer,
    PoolObjects,
    context_claim_name,
    sandbox_name,
)
from context_service.domain.context.state import ContextState
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile.actions import (
    STAGES,
    Action,
    CreateSandbox,
    CreateSandboxClaim,
    CreateWorkspaceClaim,
    DeleteClaim,
    DeleteSandbox,
    DeleteSandboxClaim,
    EnsureContextClaim,
)
from context_service.domain.reconcile.desired import context_claim, pool_objects


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """Recorded contexts and pools of one namespace (live, deleted or released)."""

    namespace: str
    pools: tuple[PoolState, ...] = ()
    contexts: tuple[ContextState, ...] = ()


class Observed(msgspec.Struct, frozen=True, kw_only=True):
    """What the cluster holds for a scope. ``pool_objects`` carries the managed, pool-labelled
    objects (and pool-labelled Pods) of at least the scope's pools; ``context_claims`` the PVCs
    named ``context-<name>`` found for the scope's contexts, by PVC name."""

    pool_objects: PoolObjects = PoolObjects()
    existing_claims: dict[str, ClaimInfo] = {}  # existing-claim PVCs read, by name
    context_claims: dict[str, ClaimInfo] = {}
    consumers: dict[str, tuple[PodConsumer, ...]] = {}  # Pods mounting it, by context name


def plan(scope: Scope, observed: Observed) -> list[Action]:
    """Every action for the scope, ordered by stage."""
    actions: list[Action] = []
    grouped = by_pool(observed.pool_objects)
    for pool in scope.pools:
        actions += plan_pool(pool, scope.namespace, grouped.get(pool.name, PoolObjects()))
    for context in scope.contexts:
        claim = observed.context_claims.get(context_claim_name(context.name))
        actions += plan_context(context, claim)
    return [a for stage in STAGES for a in actions if a.stage == stage]


def by_pool(objects: PoolObjects) -> dict[str, PoolObjects]:
    """The objects grouped by their ``context.rossoctl.io/pool`` label (one pass over them)."""
    groups: dict[str, dict[str, list[Any]]] = {}
    kinds: dict[str, tuple[_Labelled, ...]] = {
        "sandboxes": objects.sandboxes, "sandbox_claims": objects.sandbox_claims,
        "claims": objects.claims, "pods": objects.pods}
    for kind, found in kinds.items():
        for item in found:
            pool = item.labels.get(POOL_LABEL)
            if pool:
                groups.setdefault(pool, {}).setdefault(kind, []).append(item)
    return {pool: PoolObjects(**{k: tuple(v) for k, v in group.items()})
            for pool, group in groups.items()}


class _Labelled(Protocol):
    @property
    def labels(self) -> dict[str, str]: ...


def _managed(labels: dict[str, str], pool: str) -> bool:
    return labels.get(MANAGED_BY) == MANAGER and labels.get(POOL_LABEL) == pool


def plan_pool(pool: PoolState, namespace: str, objects: PoolObjects) -> list[Action]:
    """Create what a live pool lacks and delete its managed extras; release a released one."""
    if not pool.live:
        return _release(pool, namespace, objects)
    wanted = pool_objects(pool, namespace)
    claims = {c.name: c for c in objects.claims if _managed(c.labels, pool.name)}
    sandboxes = {s.name: s for s in objects.sandboxes if _managed(s.labels, pool.name)}
    bound = {c.name: c for c in objects.sandbox_claims if _managed(c.labels, pool.name)}
    actions: list[Action] = []
    actions += [CreateWorkspaceClaim(claim=c) for n, c in wanted.claims.items() if n not in claims]
    actions += [CreateSandbox(sandbox=s) for n, s in wanted.sandboxes.items() if n not in sandboxes]
    actions += [CreateSandboxClaim(claim=c) for n, c in wanted.sandbox_claims.items()
                if n not in bound]
    if pool.strategy == "warm-pool":
        actions += _deletes(DeleteSandboxClaim, namespace, bound.values(), wanted.sandbox_claims,
                            pool.name)
        return actions
    keep = {sandbox_name(pool.name, i) for i in range(pool.replicas)}
    actions += _deletes(DeleteSandbox, namespace, sandboxes.values(), keep, pool.name)
    keep_claims = {*wanted.claims, pool.workspace.claim_name}
    actions += _deletes(DeleteClaim, namespace, claims.values(), keep_claims, pool.name)
    return actions


def _release(pool: PoolState, namespace: str, objects: PoolObjects) -> list[Action]:
    """Spec 6.9: a warm-pool pool deletes its SandboxClaims (foreground); the direct strategies
    delete their Sandboxes, then their PVCs. The caller's existing claim is never deleted."""
    claims = [c for c in objects.sandbox_claims if _managed(c.labels, pool.name)]
    if pool.strategy == "warm-pool":
        return _deletes(DeleteSandboxClaim, namespace, claims, (), pool.name)
    sandboxes = [s for s in objects.sandboxes if _managed(s.labels, pool.name)]
    pvcs = [c for c in objects.claims if _managed(c.labels, pool.name)]
    keep = (pool.workspace.claim_name,) if pool.workspace.claim_name else ()
    return [*_deletes(DeleteSandbox, namespace, sandboxes, (), pool.name),
            *_deletes(DeleteClaim, namespace, pvcs, keep, pool.name)]


class _Object(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def deleting(self) -> bool: ...


def _deletes(kind: type[DeleteSandbox] | type[DeleteSandboxClaim] | type[DeleteClaim],
             namespace: str, found: Iterable[_Object], keep: Iterable[str],
             pool: str) -> list[Action]:
    """Delete each found object of ``pool`` not kept and not already being deleted."""
    kept = set(keep)
    return [kind(namespace=namespace, name=o.name, pool=pool) for o in found
            if o.name not in kept and not o.deleting]


def plan_context(context: ContextState, claim: ClaimInfo | None) -> list[Action]:
    """A live context's PVC exists with current metadata; a deleted context's PVC is deleted."""
    if not context.live:
        if claim is not None and not claim.deleting and _is_context_claim(claim, context.name):
            return [DeleteClaim(namespace=context.namespace, name=claim.name)]
        return []
    if claim is not None and claim.deleting:
        return []  # recreated once the old claim is gone
    desired = context_claim(context)
    if claim is None or not claim_in_sync(desired, claim):
        return [EnsureContextClaim(claim=desired)]
    return []


def _is_context_claim(claim: ClaimInfo, context: str) -> bool:
    return claim.labels.get(MANAGED_BY) == MANAGER and claim.labels.get(NAME_LABEL) == context


def claim_in_sync(desired: ContextClaim, observed: ClaimInfo) -> bool:
    """Labels and kept-current annotations already as desired (the spec is never changed)."""
    labels = {MANAGED_BY: MANAGER, NAME_LABEL: desired.context, TYPE_LABEL: desired.type}
    if any(observed.labels.get(k) != v for k, v in labels.items()):
        return False
    if any(observed.annotations.get(k) != v for k, v in desired.annotations.items()):
        return False
    stale = KEPT_CURRENT_ANNOTATIONS - desired.annotations.keys()
    return not any(k in observed.annotations for k in stale)
