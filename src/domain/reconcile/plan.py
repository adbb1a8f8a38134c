"""``plan(scope, observed)``: the actions that bring one namespace's recorded contexts and pools
to their desired objects. Pure and total.

Bounded reach (spec 6.2): only objects named after, and labelled for, a context or pool of the
scope are ever deleted; an existing claim, a SandboxWarmPool or a SandboxTemplate never is. An
object still being deleted is waited for, never recreated over. Applying a plan and planning
again yields nothing (once pending deletions have finished).

Drift: an object whose fields the service sets were edited (``Observed.drift``) is restored,
except an adopted pool's Sandboxes and SandboxClaims (spec 6.10). A PVC's spec cannot change
once created, so a PVC of another size, access mode or class is reported (``conflicts``), never
patched. One name, one owner: a PVC labelled for another context or pool is never relabelled,
mounted or deleted for this one (context ``x-workspace`` and pool ``context-x`` both name
``context-x-workspace``); the owner that did not get it is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
    Drift,
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
    RestoreSandbox,
    RestoreSandboxClaim,
    RestoreWorkspaceClaim,
)
from context_service.domain.reconcile.desired import context_claim, pool_objects
from context_service.domain.values import canonical_quantity, is_positive_quantity


class Scope(msgspec.Struct, frozen=True, kw_only=True):
    """Recorded contexts and pools of one namespace (live, deleted or released); ``whole``:
    all of the namespace's, not only those due for a pass."""

    namespace: str
    pools: tuple[PoolState, ...] = ()
    contexts: tuple[ContextState, ...] = ()
    whole: bool = True


class Observed(msgspec.Struct, frozen=True, kw_only=True):
    """What the cluster holds for a scope. ``pool_objects`` carries the managed, pool-labelled
    objects (and pool-labelled Pods) of at least the scope's pools; ``context_claims`` the PVCs
    named ``context-<name>`` found for the scope's contexts, by PVC name."""

    pool_objects: PoolObjects = PoolObjects()
    existing_claims: dict[str, ClaimInfo] = {}  # existing-claim PVCs read, by name
    context_claims: dict[str, ClaimInfo] = {}
    consumers: dict[str, tuple[PodConsumer, ...]] = {}  # Pods mounting it, by context name
    # PVCs a pool wants that its labelled list lacked, read by name (relabel or refuse them)
    named_claims: dict[str, ClaimInfo] = {}
    # objects whose service-set fields were edited, keyed ("sandbox", name), ("sandboxclaim",
    # name) or ("pvc", name): the listing's drift of the objects the scope's live pools want
    drift: Drift = {}


def plan(scope: Scope, observed: Observed) -> list[Action]:
    """Every action for the scope, ordered by stage."""
    actions: list[Action] = []
    grouped = by_pool(observed.pool_objects)
    for pool in scope.pools:
        actions += plan_pool(pool, scope.namespace, grouped.get(pool.name, PoolObjects()),
                             drift=observed.drift, named=observed.named_claims)
    for context in scope.contexts:
        claim = observed.context_claims.get(context_claim_name(context.name))
        actions += plan_context(context, claim)
    return [a for stage in STAGES for a in actions if a.stage == stage]


def by_pool(objects: PoolObjects) -> dict[str, PoolObjects]:
    """The objects grouped by their ``context.rossoctl.io/pool`` label (one pass over them);
    the listing's drift stays whole (``Observed.drift``)."""
    groups: dict[str, dict[str, list[Any]]] = {}
    kinds: dict[str, tuple[_Labelled, ...]] = {
        "sandboxes": objects.sandboxes, "sandbox_claims": objects.sandbox_claims,
        "claims": objects.claims, "pods": objects.pods}
    for kind, found in kinds.items():
        for item in found:
            pool = item.labels.get(POOL_LABEL)
            if pool:
                groups.setdefault(pool, {}).setdefault(kind, []).append(item)
    return {pool: PoolObjects(
        sandboxes=tuple(group.get("sandboxes", ())),
        sandbox_claims=tuple(group.get("sandbox_claims", ())),
        claims=tuple(group.get("claims", ())), pods=tuple(group.get("pods", ())))
        for pool, group in groups.items()}


class _Labelled(Protocol):
    @property
    def labels(self) -> dict[str, str]: ...


def _managed(labels: dict[str, str], pool: str) -> bool:
    return labels.get(MANAGED_BY) == MANAGER and labels.get(POOL_LABEL) == pool


def plan_pool(pool: PoolState, namespace: str, objects: PoolObjects, *,
              drift: Drift | None = None,
              named: Mapping[str, ClaimInfo] | None = None) -> list[Action]:
    """Create what a live pool lacks, restore what drifted, delete its managed extras; release
    a released one. A wanted PVC another owner holds is neither made nor mounted."""
    if not pool.live:
        return _release(pool, namespace, objects)
    wanted = pool_objects(pool, namespace)
    drifted = drift or {}
    claims = {c.name: c for c in objects.claims if _managed(c.labels, pool.name)}
    sandboxes = {s.name: s for s in objects.sandboxes if _managed(s.labels, pool.name)}
    bound = {c.name: c for c in objects.sandbox_claims if _managed(c.labels, pool.name)}
    found = {n: c for n, c in (named or {}).items() if n in wanted.claims and n not in claims}
    refused = {n for n, c in found.items() if other_owner(c.labels, namespace, pool=pool.name)}
    relabel = {n: c for n, c in found.items() if n not in refused}
    actions: list[Action] = []
    actions += [CreateWorkspaceClaim(claim=c) for n, c in wanted.claims.items()
                if n not in claims and n not in found]
    actions += [RestoreWorkspaceClaim(claim=c) for n, c in wanted.claims.items()
                if _drifted(drifted, "pvc", claims.get(n)) or _live(relabel.get(n))]
    actions += [CreateSandbox(sandbox=s) for n, s in wanted.sandboxes.items()
                if n not in sandboxes and s.claim not in refused]
    actions += [CreateSandboxClaim(claim=c) for n, c in wanted.sandbox_claims.items()
                if n not in bound]
    if not pool.adopted:  # spec 6.10: adopted Sandboxes and SandboxClaims are not rewritten
        actions += [RestoreSandbox(sandbox=s) for n, s in wanted.sandboxes.items()
                    if _drifted(drifted, "sandbox", sandboxes.get(n))]
        actions += [RestoreSandboxClaim(claim=c) for n, c in wanted.sandbox_claims.items()
                    if _drifted(drifted, "sandboxclaim", bound.get(n))]
    if pool.strategy == "warm-pool":
        actions += _deletes(DeleteSandboxClaim, namespace, bound.values(), wanted.sandbox_claims,
                            pool.name)
        return actions
    keep = {sandbox_name(pool.name, i) for i in range(pool.replicas)}
    actions += _deletes(DeleteSandbox, namespace, sandboxes.values(), keep, pool.name)
    keep_claims = {*wanted.claims, pool.workspace.claim_name}
    actions += _deletes(DeleteClaim, namespace, claims.values(), keep_claims, pool.name)
    return actions


def _live(found: _Object | None) -> bool:
    return found is not None and not found.deleting


def _drifted(drift: Drift, kind: str, found: _Object | None) -> bool:
    """Found, not being deleted, and edited since the service set it."""
    return found is not None and not found.deleting and (kind, found.name) in drift


def other_owner(labels: Mapping[str, str], namespace: str, *, pool: str = "",
                context: str = "") -> str:
    """The other context or pool a PVC's labels give it to ("" when they name none or only
    ``pool``/``context``): such a claim is never relabelled, mounted or deleted for this one."""
    if labels.get(POOL_LABEL, pool) != pool:
        return f"pool {labels[POOL_LABEL]}"
    if labels.get(NAME_LABEL, context) != context:
        return f"context {namespace}/{labels[NAME_LABEL]}"
    return ""


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
    if claim is not None and own_claim(context, claim) is None:
        return []  # another owner's claim: reported (``conflicts``), never touched
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


def own_claim(context: ContextState, claim: ClaimInfo | None) -> ClaimInfo | None:
    """The claim found under the context's PVC name, unless its labels give it to another
    owner (then the context has no claim: it stays provisioning and never reads that one)."""
    if claim is None or other_owner(claim.labels, context.namespace, context=context.name):
        return None
    return claim


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


# --- what a pass cannot repair ----------------------------------------------------------------


def conflicts(scope: Scope, observed: Observed) -> list[str]:
    """What the plan leaves alone and an operator must resolve: a wanted PVC another owner holds,
    and a PVC whose immutable spec no longer matches what its owner asked for."""
    grouped = by_pool(observed.pool_objects)
    found: list[str] = []
    for pool in scope.pools:
        if pool.live:
            found += _pool_conflicts(pool, scope.namespace, observed,
                                     grouped.get(pool.name, PoolObjects()))
    for context in scope.contexts:
        claim = observed.context_claims.get(context_claim_name(context.name))
        if context.live and claim is not None and not claim.deleting:
            found += _context_conflicts(context, claim)
    return found


def _pool_conflicts(pool: PoolState, ns: str, observed: Observed,
                    objects: PoolObjects) -> list[str]:
    wanted = pool_objects(pool, ns).claims
    who = f"pool {pool.name}"
    found = []
    for name, claim in sorted(observed.named_claims.items()):
        other = other_owner(claim.labels, ns, pool=pool.name)
        if name in wanted and other:
            found.append(_taken(ns, name, other, who))
    for claim in objects.claims:
        desired = wanted.get(claim.name)
        if desired is not None and not claim.deleting:
            found += _immutable(claim, desired.size, desired.access_mode,
                                desired.storage_class, who)
    return found


def _context_conflicts(context: ContextState, claim: ClaimInfo) -> list[str]:
    ns = context.namespace
    who = f"context {ns}/{context.name}"
    other = other_owner(claim.labels, ns, context=context.name)
    if other:
        return [_taken(ns, claim.name, other, who)]
    desired = context_claim(context)
    return _immutable(claim, desired.size, desired.access_mode, desired.storage_class, who)


def _taken(namespace: str, name: str, other: str, who: str) -> str:
    return f"pvc {namespace}/{name} belongs to {other}: {who} cannot use it"


def _immutable(claim: ClaimInfo, size: str, access_mode: str, storage_class: str,
               who: str) -> list[str]:
    """The spec fields of ``claim`` that differ from what ``who`` asked for (the server refuses
    a smaller request, another class or other access modes on an existing claim)."""
    differ = []
    if claim.size and _quantity(claim.size) != _quantity(size):
        differ.append(f"size {claim.size}, not {size}")
    if claim.access_modes and claim.access_modes != (access_mode,):
        differ.append(f"accessModes {','.join(claim.access_modes)}, not {access_mode}")
    if storage_class and claim.storage_class != storage_class:
        differ.append(f"storageClassName {claim.storage_class or '(none)'}, not {storage_class}")
    if not differ:
        return []
    return [f"pvc {claim.namespace}/{claim.name} of {who} has {'; '.join(differ)}: a claim's "
            f"spec cannot be changed, so it is left as it is"]


def _quantity(text: str) -> str:
    return canonical_quantity(text) if is_positive_quantity(text) else text
