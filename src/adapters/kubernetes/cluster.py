"""``KubernetesCluster``: the cluster port implemented against a real API server.

Creates are create-if-absent (409 means "already there", unless the PVC there is labelled for
another owner: then the create is refused), restores are server-side applies of the fields the
service owns (``manifests.owned``) under its field manager, deletes ignore 404, and a 404 for a
custom resource is told apart from a missing object through discovery, never by parsing bodies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from context_service.adapters.kubernetes import manifests, parse
from context_service.adapters.kubernetes.rest import (
    APPLY_PATCH,
    CONFIG_MAPS,
    JSON,
    NAMESPACES,
    PODS,
    PVCS,
    STORAGE_CLASSES,
    Resource,
    Rest,
)
from context_service.adapters.kubernetes.watch import ClusterWatch
from context_service.domain.cluster import (
    API_NOT_INSTALLED,
    KEPT_CURRENT_ANNOTATIONS,
    MANAGED_BY,
    MANAGER,
    NAME_LABEL,
    POOL_LABEL,
    SANDBOX_CLAIMS,
    SANDBOX_TEMPLATES,
    SANDBOX_WARM_POOLS,
    SANDBOXES,
    VOLUME_SNAPSHOT_CLASSES,
    VOLUME_SNAPSHOTS,
    Change,
    ClaimInfo,
    ClusterError,
    ContextClaim,
    ContextSnapshot,
    PodConsumer,
    PoolObject,
    PoolObjects,
    PoolSandbox,
    PoolSandboxClaim,
    QueryIndexMirror,
    SandboxClaimInfo,
    SandboxInfo,
    SandboxTemplateInfo,
    SnapshotClassInfo,
    SnapshotInfo,
    StorageClassInfo,
    WarmPoolInfo,
    WorkspaceClaim,
    context_claim_name,
    query_mirror_name,
    workspace_claim_name,
)
from context_service.domain.reconcile.plan import other_owner

SANDBOX = Resource(*SANDBOXES)
SANDBOX_CLAIM = Resource(*SANDBOX_CLAIMS)
SANDBOX_TEMPLATE = Resource(*SANDBOX_TEMPLATES)
WARM_POOL = Resource(*SANDBOX_WARM_POOLS)
SNAPSHOT = Resource(*VOLUME_SNAPSHOTS)
SNAPSHOT_CLASS = Resource(*VOLUME_SNAPSHOT_CLASSES, namespaced=False)
MANAGED = f"{MANAGED_BY}={MANAGER}"
NAME_TAKEN = "NameTaken"


def _by_name(items: list[JSON]) -> list[JSON]:
    return sorted(items, key=lambda i: (parse.meta(i).get("namespace", ""), parse.meta(i)["name"]))


class KubernetesCluster:
    """The ``Cluster`` port over one ``Rest`` connection; safe to share between threads.

    ``pool_namespace`` (the service's ``CS_NAMESPACE``) is where pool objects live: watches of
    Sandboxes and SandboxClaims stay inside it, so the service needs no cluster-wide access to
    them (``access.GRANTS``). None watches them wherever ``watch`` is asked to."""

    def __init__(self, rest: Rest, field_manager: str = MANAGER,
                 pool_namespace: str | None = None) -> None:
        self.rest = rest
        self.manager = field_manager
        self.pool_namespace = pool_namespace

    # --- plumbing ---------------------------------------------------------------------------

    def has_resource(self, group: str, version: str, plural: str) -> bool:
        served = self.rest.resources(group, version)
        return served is not None and plural in served

    def _installed(self, res: Resource) -> bool:
        return not res.group or self.has_resource(res.group, res.version, res.plural)

    def _missing_api(self, res: Resource, exc: ClusterError) -> ClusterError:
        """Re-label a 404 as API_NOT_INSTALLED when discovery does not list the resource."""
        if exc.status == 404 and not self._installed(res):
            return ClusterError(404, API_NOT_INSTALLED, f"{res.plural}.{res.group} not installed")
        return exc

    def _get(self, res: Resource, namespace: str | None, name: str) -> JSON | None:
        return self.rest.find(res.path(namespace, name))

    def _list(
        self, res: Resource, namespace: str | None, selector: str = "", missing_ok: bool = False
    ) -> list[JSON]:
        try:
            return _by_name(self.rest.items(res.path(namespace), selector))
        except ClusterError as exc:
            error = self._missing_api(res, exc)
            if missing_ok and error.api_not_installed:
                return []
            raise error from exc

    def _create(self, res: Resource, namespace: str, body: JSON) -> bool:
        try:
            self.rest.create(res.path(namespace), body, self.manager)
        except ClusterError as exc:
            if exc.status == 409 and exc.reason == "AlreadyExists":
                return False
            raise self._missing_api(res, exc) from exc
        return True

    def _delete(self, res: Resource, namespace: str, name: str, propagation: str) -> bool:
        try:
            self.rest.delete(res.path(namespace, name), propagation)
        except ClusterError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    # --- storage ----------------------------------------------------------------------------

    def list_storage_classes(self) -> list[StorageClassInfo]:
        return [parse.storage_class(i) for i in self._list(STORAGE_CLASSES, None)]

    def get_claim(self, namespace: str, name: str) -> ClaimInfo | None:
        item = self._get(PVCS, namespace, name)
        return parse.claim(item) if item is not None else None

    def ensure_context_claim(self, claim: ContextClaim) -> bool:
        """Create the PVC if absent; otherwise bring its labels and kept-current annotations up
        to date (the spec of an existing claim is never touched)."""
        body = manifests.context_claim(claim)
        if self._create(PVCS, claim.namespace, body):
            return True
        name = context_claim_name(claim.context)
        current = self._get(PVCS, claim.namespace, name)
        if current is None:  # deleted in between: the next pass creates it
            return False
        self._refuse_taken(current, other_owner(
            parse.strings(parse.meta(current).get("labels")), claim.namespace,
            context=claim.context), f"context {claim.namespace}/{claim.context}")
        patch = _metadata_patch(parse.meta(current), body["metadata"])
        if patch:
            self.rest.patch(PVCS.path(claim.namespace, name), {"metadata": patch}, self.manager)
        return False

    def ensure_workspace_claim(self, claim: WorkspaceClaim) -> bool:
        if self._create(PVCS, claim.namespace, manifests.workspace_claim(claim)):
            return True
        name = workspace_claim_name(claim.pool, claim.index)
        current = self._get(PVCS, claim.namespace, name)
        if current is not None:  # a claim of another owner is never mounted by this pool
            self._refuse_taken(current, other_owner(
                parse.strings(parse.meta(current).get("labels")), claim.namespace,
                pool=claim.pool), f"pool {claim.pool}")
        return False

    def restore_workspace_claim(self, claim: WorkspaceClaim) -> bool:
        return self._restore(PVCS, claim)

    @staticmethod
    def _refuse_taken(current: JSON, other: str, who: str) -> None:
        """Two owners want one PVC name (context ``x-workspace`` and pool ``context-x``): the
        one whose labels it carries keeps it, the other is refused."""
        if other:
            name = parse.meta(current).get("name")
            raise ClusterError(409, NAME_TAKEN, f"pvc {name} belongs to {other}, not {who}")

    def delete_claim(self, namespace: str, name: str) -> bool:
        return self._delete(PVCS, namespace, name, "Background")

    def list_context_claims(self, namespace: str | None = None) -> list[ClaimInfo]:
        items = self._list(PVCS, namespace, f"{MANAGED},{NAME_LABEL}")
        return [parse.claim(i) for i in items]

    def list_claim_consumers(self, namespace: str, claim: str) -> list[PodConsumer]:
        found = (parse.consumer(i, claim) for i in self._list(PODS, namespace))
        return [c for c in found if c is not None]

    # --- sandboxes --------------------------------------------------------------------------

    def get_sandbox_template(self, namespace: str, name: str) -> SandboxTemplateInfo | None:
        item = self._get(SANDBOX_TEMPLATE, namespace, name)
        return parse.sandbox_template(item) if item is not None else None

    def get_warm_pool(self, namespace: str, name: str) -> WarmPoolInfo | None:
        item = self._get(WARM_POOL, namespace, name)
        return parse.warm_pool(item) if item is not None else None

    def get_sandbox(self, namespace: str, name: str) -> SandboxInfo | None:
        item = self._get(SANDBOX, namespace, name)
        return parse.sandbox(item) if item is not None else None

    def ensure_sandbox(self, sandbox: PoolSandbox) -> bool:
        return self._create(SANDBOX, sandbox.namespace, manifests.sandbox(sandbox))

    def restore_sandbox(self, sandbox: PoolSandbox) -> bool:
        return self._restore(SANDBOX, sandbox)

    def delete_sandbox(self, namespace: str, name: str) -> bool:
        return self._delete(SANDBOX, namespace, name, "Background")

    def get_sandbox_claim(self, namespace: str, name: str) -> SandboxClaimInfo | None:
        item = self._get(SANDBOX_CLAIM, namespace, name)
        return parse.sandbox_claim(item) if item is not None else None

    def ensure_sandbox_claim(self, claim: PoolSandboxClaim) -> bool:
        return self._create(SANDBOX_CLAIM, claim.namespace, manifests.sandbox_claim(claim))

    def restore_sandbox_claim(self, claim: PoolSandboxClaim) -> bool:
        return self._restore(SANDBOX_CLAIM, claim)

    def _restore(self, res: Resource, desired: PoolObject) -> bool:
        """Server-side apply of the owned fields, forced: the service takes back the fields it
        sets from whoever edited them; fields it does not set keep their managers and values."""
        _, body = manifests.owned(desired)
        path = res.path(desired.namespace, body["metadata"]["name"])
        try:
            self.rest.patch(path, body, self.manager, content_type=APPLY_PATCH)
        except ClusterError as exc:
            raise self._missing_api(res, exc) from exc
        return True

    def delete_sandbox_claim(self, namespace: str, name: str) -> bool:
        return self._delete(SANDBOX_CLAIM, namespace, name, "Foreground")

    def list_pool_objects(self, namespace: str, pool: str | None = None,
                          wanted: Iterable[PoolObject] = ()) -> PoolObjects:
        """Four lists; the ``wanted`` objects found are compared with what they hold, so their
        drift costs no request more."""
        pool_selector = POOL_LABEL if pool is None else f"{POOL_LABEL}={pool}"
        managed = f"{MANAGED},{pool_selector}"
        raw = {
            "sandbox": self._list(SANDBOX, namespace, managed, missing_ok=True),
            "sandboxclaim": self._list(SANDBOX_CLAIM, namespace, managed, missing_ok=True),
            "pvc": self._list(PVCS, namespace, managed),
        }
        found = {(kind, parse.meta(i)["name"]): i for kind, items in raw.items() for i in items}
        return PoolObjects(
            sandboxes=tuple(parse.sandbox(i) for i in raw["sandbox"]),
            sandbox_claims=tuple(parse.sandbox_claim(i) for i in raw["sandboxclaim"]),
            claims=tuple(parse.claim(i) for i in raw["pvc"]),
            pods=tuple(parse.pod(i) for i in self._list(PODS, namespace, pool_selector)),
            drift=manifests.drift(wanted, found),
        )

    # --- snapshots --------------------------------------------------------------------------

    def list_snapshot_classes(self) -> list[SnapshotClassInfo]:
        return [parse.snapshot_class(i) for i in self._list(SNAPSHOT_CLASS, None)]

    def ensure_snapshot(self, snapshot: ContextSnapshot) -> bool:
        return self._create(SNAPSHOT, snapshot.namespace, manifests.volume_snapshot(snapshot))

    def get_snapshot(self, namespace: str, name: str) -> SnapshotInfo | None:
        item = self._get(SNAPSHOT, namespace, name)
        return parse.snapshot(item) if item is not None else None

    def delete_snapshot(self, namespace: str, name: str) -> bool:
        return self._delete(SNAPSHOT, namespace, name, "Background")

    def list_snapshots(self, namespace: str, context: str | None = None) -> list[SnapshotInfo]:
        name = NAME_LABEL if context is None else f"{NAME_LABEL}={context}"
        items = self._list(SNAPSHOT, namespace, f"{MANAGED},{name}", missing_ok=True)
        return [parse.snapshot(i) for i in items]

    # --- query-index mirror -----------------------------------------------------------------

    def apply_query_mirror(self, mirror: QueryIndexMirror) -> None:
        body = manifests.query_mirror(mirror)
        path = CONFIG_MAPS.path(mirror.namespace, body["metadata"]["name"])
        self.rest.patch(path, body, self.manager, content_type=APPLY_PATCH)

    def delete_query_mirror(self, namespace: str, context: str) -> bool:
        return self._delete(CONFIG_MAPS, namespace, query_mirror_name(context), "Background")

    def get_query_mirror(self, namespace: str, context: str) -> str | None:
        found = self._get(CONFIG_MAPS, namespace, query_mirror_name(context))
        data = (found or {}).get("data") or {}
        value = data.get("index.json")
        return value if isinstance(value, str) else None

    # --- watching and setup -----------------------------------------------------------------

    def watch(self, namespace: str | None, on_change: Callable[[Change], None]) -> ClusterWatch:
        resources = (PVCS, PODS, SANDBOX, SANDBOX_CLAIM, SNAPSHOT)
        pools = {} if self.pool_namespace is None else {
            r.plural: self.pool_namespace for r in (SANDBOX, SANDBOX_CLAIM)}
        return ClusterWatch(self.rest, resources, namespace, on_change,
                            namespaces=pools).start()

    def ensure_namespace(self, name: str) -> bool:
        """Create a namespace if absent (setup helper, not part of the port)."""
        body: JSON = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        try:
            self.rest.create(NAMESPACES.path(), body, self.manager)
        except ClusterError as exc:
            if exc.status == 409:
                return False
            raise
        return True


def _metadata_patch(current: JSON, desired: JSON) -> JSON:
    """A merge patch making labels and annotations match ``desired``; kept-current annotations
    missing from ``desired`` are removed. Empty when nothing differs."""
    patch: JSON = {}
    labels = parse.strings(current.get("labels"))
    label_patch = {k: v for k, v in desired.get("labels", {}).items() if labels.get(k) != v}
    if label_patch:
        patch["labels"] = label_patch
    annotations = parse.strings(current.get("annotations"))
    wanted: dict[str, str] = desired.get("annotations", {})
    annotation_patch: dict[str, Any] = {k: v for k, v in wanted.items() if annotations.get(k) != v}
    for key in KEPT_CURRENT_ANNOTATIONS:
        if key in annotations and key not in wanted:
            annotation_patch[key] = None
    if annotation_patch:
        patch["annotations"] = annotation_patch
    return patch
