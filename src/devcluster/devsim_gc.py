"""The development stand-in's garbage collector, for servers run without kube-controller-manager.

Deletes objects whose owners (by uid) are gone, and completes foreground deletions: the
dependents of an owner holding the ``foregroundDeletion`` finalizer are deleted first, then the
finalizer is dropped. Covers the kinds our pools use: SandboxClaims, Sandboxes, Pods and PVCs.
"""

from __future__ import annotations

from context_service.adapters.kubernetes.cluster import SANDBOX, SANDBOX_CLAIM
from context_service.adapters.kubernetes.parse import meta, obj
from context_service.adapters.kubernetes.rest import JSON, PODS, PVCS, Resource, Rest
from context_service.domain.cluster import ClusterError

KINDS = (SANDBOX_CLAIM, SANDBOX, PODS, PVCS)
FOREGROUND = "foregroundDeletion"
MANAGER = "dev-simulator"


def _owners(item: JSON) -> set[str]:
    return {str(obj(r).get("uid")) for r in meta(item).get("ownerReferences") or []}


def _items(rest: Rest, res: Resource, namespace: str | None) -> list[JSON]:
    try:
        return rest.items(res.path(namespace))
    except ClusterError as exc:
        if exc.status == 404:  # CRD not installed
            return []
        raise


def _delete(rest: Rest, res: Resource, item: JSON, propagation: str) -> None:
    m = meta(item)
    if m.get("deletionTimestamp"):
        return
    try:
        rest.delete(res.path(m["namespace"], m["name"]), propagation)
    except ClusterError as exc:
        if exc.status != 404:
            raise


def collect(rest: Rest, namespace: str | None = None) -> None:
    """One garbage-collection pass over ``namespace`` (or all namespaces)."""
    objects = [(res, item) for res in KINDS for item in _items(rest, res, namespace)]
    uids = {str(meta(item).get("uid")) for _, item in objects}
    for res, item in objects:
        owners = _owners(item)
        if owners and not owners & uids:
            _delete(rest, res, item, "Background")
    for res, owner in objects:
        m = meta(owner)
        if not m.get("deletionTimestamp") or FOREGROUND not in (m.get("finalizers") or []):
            continue
        dependents = [(r, i) for r, i in objects if str(m.get("uid")) in _owners(i)]
        for dep_res, dependent in dependents:
            _delete(rest, dep_res, dependent, "Foreground" if dep_res is SANDBOX else "Background")
        if not dependents:
            remaining = [f for f in m.get("finalizers") or [] if f != FOREGROUND]
            patch = {"metadata": {"finalizers": remaining or None}}
            try:
                rest.patch(res.path(m["namespace"], m["name"]), patch, MANAGER)
            except ClusterError as exc:
                if exc.status != 404:
                    raise
