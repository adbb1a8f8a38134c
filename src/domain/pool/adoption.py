"""Adoption of existing pool objects (spec 6.10): objects labelled managed-by and with a pool
label are grouped by pool and become one ``SandboxPoolRequested(adopted=True)`` each. Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from context_service.domain.cluster import POOL_LABEL, REPLICAS_KEY, PoolObjects
from context_service.domain.pool.events import SandboxPoolRequested, Workspace
from context_service.domain.values import canonical_quantity, is_positive_quantity

PREFIX = "context.rossoctl.io/"


@dataclass(frozen=True, slots=True)
class PoolImport:
    name: str
    event: SandboxPoolRequested | None
    reason: str = ""  # why it is not imported


def _positive(raw: str | None) -> int | None:
    return int(raw) if raw is not None and raw.isdigit() and int(raw) > 0 else None


def group_pools(objects: PoolObjects, namespace: str, now: datetime,
                actor: str) -> list[PoolImport]:
    labels = [*(o.labels for o in objects.sandboxes), *(o.labels for o in objects.sandbox_claims),
              *(o.labels for o in objects.claims)]
    names = sorted({found.get(POOL_LABEL, "") for found in labels} - {""})
    return [_one(objects, namespace, name, now, actor) for name in names]


def _one(objects: PoolObjects, namespace: str, name: str, now: datetime,
         actor: str) -> PoolImport:
    claims = [c for c in objects.sandbox_claims if c.labels.get(POOL_LABEL) == name]
    if claims:
        claim = sorted(claims, key=lambda c: c.name)[0]
        return PoolImport(name, SandboxPoolRequested(
            at=now, actor=actor, name=name, replicas=len(claims), strategy="warm-pool",
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
        return PoolImport(name, None, "replica count missing or not a positive integer")
    notes = sandboxes[0].annotations if sandboxes else {}
    claim_name = notes.get(PREFIX + "workspace-claim", "")
    if claim_name:
        strategy = "existing-claim"
        workspace = Workspace(claim_name=claim_name,
                              read_only=notes.get(PREFIX + "workspace-read-only") == "true")
    else:
        shared = len(pvcs) == 1 and pvcs[0].name == f"{name}-workspace"
        dedicated = any(re.fullmatch(rf"{re.escape(name)}-workspace-\d+", c.name) for c in pvcs)
        strategy = "shared" if shared or not dedicated else "dedicated"
        pvc = pvcs[0] if pvcs else None
        size = pvc.size if pvc else ""
        workspace = Workspace(
            size=canonical_quantity(size) if is_positive_quantity(size) else size,
            access_mode=pvc.access_modes[0] if pvc and pvc.access_modes else "",
            storage_class=pvc.storage_class if pvc else "")
    return PoolImport(name, SandboxPoolRequested(
        at=now, actor=actor, name=name, replicas=replicas, strategy=strategy,
        workspace=workspace, sandbox_profile=notes.get(PREFIX + "sandbox-profile", ""),
        namespace=namespace, adopted=True))
