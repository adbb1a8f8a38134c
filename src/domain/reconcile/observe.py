"""What observed objects mean for the log: pool status (spec 6.8), context claim phase and
assigned class (spec 6.3), observed pod consumers (spec 3.6). Pure; the commands built here emit
events only when the aggregate's recorded observation differs.
"""

from __future__ import annotations

from datetime import UTC, datetime

from context_service.domain.cluster import ClaimInfo, PodConsumer, PoolObjects
from context_service.domain.context.commands import ObserveClaim, ObservePodConsumers
from context_service.domain.context.events import Consumer
from context_service.domain.events import Subject
from context_service.domain.pool.commands import ObservePool
from context_service.domain.pool.events import Resource, Workspace
from context_service.domain.pool.state import PoolState
from context_service.domain.values import canonical_quantity, is_positive_quantity

RECONCILER = Subject("service", "context-service")
KIND_RANK = {"sandboxclaim": 0, "sandbox": 1, "pod": 2, "pvc": 3}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def condition_status(ready: bool, reason: str) -> str:
    """Sandbox and SandboxClaim status: Ready, else the Ready condition's reason, else
    Provisioning."""
    return "Ready" if ready else (reason or "Provisioning")


def pool_resources(pool: PoolState, objects: PoolObjects,
                   existing: ClaimInfo | None) -> tuple[Resource, ...]:
    """The pool's objects as ``resources``, in kind-rank then plain name order."""
    found = [Resource("pod", p.name, p.phase or "Pending") for p in objects.pods]
    if pool.strategy == "warm-pool":
        found += [Resource("sandboxclaim", c.name, condition_status(c.ready, c.reason))
                  for c in objects.sandbox_claims]
    else:
        found += [Resource("sandbox", s.name, condition_status(s.ready, s.reason))
                  for s in objects.sandboxes]
        found += [Resource("pvc", c.name, c.phase or "Pending") for c in objects.claims]
        if existing is not None and all(c.name != existing.name for c in objects.claims):
            found.append(Resource("pvc", existing.name, existing.phase or "Pending"))
    return tuple(sorted(found, key=lambda r: (KIND_RANK[r.kind], r.name)))


def ready_replicas(pool: PoolState, objects: PoolObjects) -> int:
    """Ready Pods with the pool label (direct strategies), Ready SandboxClaims (warm pool)."""
    if pool.strategy == "warm-pool":
        return sum(1 for c in objects.sandbox_claims if c.ready)
    return sum(1 for p in objects.pods if p.ready)


def existing_workspace(pool: PoolState, claim: ClaimInfo) -> Workspace:
    """The caller's claim as observed: canonical size, first access mode, storage class."""
    size = canonical_quantity(claim.size) if is_positive_quantity(claim.size) else claim.size
    return Workspace(size=size, access_mode=claim.access_modes[0] if claim.access_modes else "",
                     storage_class=claim.storage_class, claim_name=pool.workspace.claim_name,
                     read_only=pool.workspace.read_only)


def observe_pool(pool: PoolState, objects: PoolObjects,
                 existing: ClaimInfo | None) -> ObservePool:
    """The observation of one pool from its objects (already narrowed to the pool's label)."""
    workspace = None
    if pool.strategy == "existing-claim" and existing is not None:
        workspace = existing_workspace(pool, existing)
    return ObservePool(name=pool.name, ready_replicas=ready_replicas(pool, objects),
                       resources=pool_resources(pool, objects, existing), workspace=workspace)


def observe_claim(claim: ClaimInfo | None) -> ObserveClaim:
    """The context PVC's phase ("" while there is none) and the class the cluster assigned."""
    if claim is None:
        return ObserveClaim(actor=RECONCILER, phase="")
    return ObserveClaim(actor=RECONCILER, phase=claim.phase, storage_class=claim.storage_class)


def pod_consumer(pod: PodConsumer) -> Consumer:
    return Consumer(subject=Subject("service", pod.subject_name), kind="pod", name=pod.pod,
                    access_mode=pod.access_mode, active=pod.active, desired=True,
                    since=pod.since or EPOCH)


def observe_consumers(pods: tuple[PodConsumer, ...]) -> ObservePodConsumers:
    """Every Pod mounting the claim, whatever its phase, in name order."""
    consumers = tuple(sorted((pod_consumer(p) for p in pods), key=lambda c: c.name))
    return ObservePodConsumers(actor=RECONCILER, consumers=consumers)
