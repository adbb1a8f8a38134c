"""Adoption of existing pool objects (spec 6.10): objects labelled managed-by and with a pool
label are grouped by pool and become one ``SandboxPoolRequested(adopted=True)`` each. Pure.
A group this service could not have made (a label value that is no pool name, a replica count
outside 1 to 100, Sandboxes of a managed workspace whose PVCs are gone) is reported instead: the
reconciler could never converge it. So is a group whose every object is being deleted."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from context_service.domain.cluster import (
    POOL_LABEL,
    REPLICAS_KEY,
    ClaimInfo,
    PoolObjects,
    SandboxClaimInfo,
)
from context_service.domain.pool.events import SandboxPoolRequested, Workspace
from context_service.domain.values import canonical_quantity, is_context_name, is_positive_quantity

PREFIX = "context.rossoctl.io/"
MAX_REPLICAS = 100  # spec 2.9: a pool has at most 100 replicas


@dataclass(frozen=True, slots=True)
class PoolImport:
    name: str
    event: SandboxPoolRequested | None
    reason: str = ""  # why it is not imported


def _positive(raw: str | None) -> int | None:
    """A replica count a pool of this service can have (1 to 100, ASCII digits), else None:
    ``str.isdigit`` alone admits digits ``int`` refuses (``²``) and counts without bound."""
    if raw is None or not raw.isascii() or not raw.isdigit() or len(raw) > 3:
        return None
    return int(raw) if 1 <= int(raw) <= MAX_REPLICAS else None


ClaimLookup = Callable[[str], ClaimInfo | None]


def _no_claim(_name: str) -> ClaimInfo | None:
    return None


def group_pools(objects: PoolObjects, namespace: str, now: datetime, actor: str,
                claim_of: ClaimLookup = _no_claim) -> list[PoolImport]:
    """``claim_of`` reads an existing claim of ``namespace`` by name (the caller's PVC carries
    no pool label, so ``objects`` cannot hold it): its size, mode and class are the workspace."""
    staying = _not_deleting(objects)
    live = _names(staying)
    return [_group(staying, live, namespace, name, now, actor, claim_of)
            for name in sorted(_names(objects))]


def _names(objects: PoolObjects) -> set[str]:
    labels = [*(o.labels for o in objects.sandboxes), *(o.labels for o in objects.sandbox_claims),
              *(o.labels for o in objects.claims)]
    return {found.get(POOL_LABEL, "") for found in labels} - {""}


def _not_deleting(objects: PoolObjects) -> PoolObjects:
    """Only objects that stay describe a pool: those being deleted are a release (here or by a
    former installation) running its course, and importing them made the pool live again, its
    reconciler recreating what the release removes."""
    return PoolObjects(sandboxes=tuple(s for s in objects.sandboxes if not s.deleting),
                       sandbox_claims=tuple(c for c in objects.sandbox_claims if not c.deleting),
                       claims=tuple(c for c in objects.claims if not c.deleting))


def _group(staying: PoolObjects, live: set[str], namespace: str, name: str, now: datetime,
           actor: str, claim_of: ClaimLookup) -> PoolImport:
    if not is_context_name(name):
        return PoolImport(name, None, "pool name is not a lowercase Kubernetes name no longer "
                          "than 50 characters")
    if name not in live:
        return PoolImport(name, None, "its objects are being deleted")
    return _one(staying, namespace, name, now, actor, claim_of)


def _warm_replicas(name: str, claims: list[SandboxClaimInfo]) -> int:
    """A warm-pool pool's size: one past the highest index of its claims that stay
    (``claim-<pool>-<i>``). One being deleted below it is being replaced, which the reconciler
    makes again; counting only those that stay shrank the pool, and its reconciler then deleted
    the claim of the highest index, a sandbox in use."""
    indexes = [int(found[1]) for c in claims
               if (found := re.fullmatch(rf"claim-{re.escape(name)}-(0|[1-9][0-9]*)", c.name))]
    return max(len(claims), max(indexes, default=-1) + 1)


def _one(objects: PoolObjects, namespace: str, name: str, now: datetime,
         actor: str, claim_of: ClaimLookup) -> PoolImport:
    claims = [c for c in objects.sandbox_claims if c.labels.get(POOL_LABEL) == name]
    if claims:
        claim = sorted(claims, key=lambda c: c.name)[0]
        size = _warm_replicas(name, claims)
        if size > MAX_REPLICAS:  # a claim of a high index, or too many claims
            return PoolImport(name, None, f"replica count {size} (by its claims' names) is "
                              f"more than {MAX_REPLICAS}")
        return PoolImport(name, SandboxPoolRequested(
            at=now, actor=actor, name=name, replicas=size,
            strategy="warm-pool",
            workspace=Workspace(), warm_pool_ref=claim.warm_pool, namespace=namespace,
            adopted=True))
    sandboxes = sorted((s for s in objects.sandboxes if s.labels.get(POOL_LABEL) == name),
                       key=lambda s: s.name)
    pvcs = sorted((c for c in objects.claims if c.labels.get(POOL_LABEL) == name),
                  key=lambda c: c.name)
    replicas = None
    if sandboxes:
        replicas = _positive(sandboxes[0].annotations.get(REPLICAS_KEY))
    if replicas is None and pvcs:
        replicas = _positive(pvcs[0].labels.get(REPLICAS_KEY))
    if replicas is None:
        return PoolImport(name, None, "replica count missing or not an integer from 1 to "
                          f"{MAX_REPLICAS}")
    notes = sandboxes[0].annotations if sandboxes else {}
    claim_name = notes.get(PREFIX + "workspace-claim", "")
    if claim_name:
        strategy = "existing-claim"
        workspace = _claimed(claim_name, notes.get(PREFIX + "workspace-read-only") == "true",
                             claim_of(claim_name))
    elif not pvcs:  # the managed workspace's PVCs are gone, and its size and mode with them:
        # the pool would ask for a PVC the API server refuses on every pass
        return PoolImport(name, None, "no workspace PVC and no existing claim named")
    else:
        shared = len(pvcs) == 1 and pvcs[0].name == f"{name}-workspace"
        dedicated = any(re.fullmatch(rf"{re.escape(name)}-workspace-\d+", c.name) for c in pvcs)
        strategy = "shared" if shared or not dedicated else "dedicated"
        pvc = pvcs[0]
        workspace = Workspace(
            size=canonical_quantity(pvc.size) if is_positive_quantity(pvc.size) else pvc.size,
            access_mode=pvc.access_modes[0] if pvc.access_modes else "",
            storage_class=pvc.storage_class)
    return PoolImport(name, SandboxPoolRequested(
        at=now, actor=actor, name=name, replicas=replicas, strategy=strategy,
        workspace=workspace, sandbox_profile=notes.get(PREFIX + "sandbox-profile", ""),
        namespace=namespace, adopted=True))


def _claimed(name: str, read_only: bool, claim: ClaimInfo | None) -> Workspace:
    """The existing-PVC workspace (spec 6.10: size, mode and class from the claim, as a create
    reads it, spec 1.12); without the claim, only its name until the reconciler observes it."""
    if claim is None:
        return Workspace(claim_name=name, read_only=read_only)
    size = canonical_quantity(claim.size) if is_positive_quantity(claim.size) else claim.size
    return Workspace(size=size, access_mode=claim.access_modes[0] if claim.access_modes else "",
                     storage_class=claim.storage_class, claim_name=name, read_only=read_only)
