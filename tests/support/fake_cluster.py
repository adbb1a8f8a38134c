"""An in-memory ``Cluster`` for unit tests of code written against the port.

Objects are stored as the same JSON the adapter writes (``manifests``) and read back through
the same parsers (``parse``), so shapes and observation rules match the real adapter. What a
real API server adds is modelled only lightly: uids, creation times, no quantity canonicalising.
Test helpers play the controllers (``set_claim_phase``, ``add_pod``, ``set_ready`` ...),
``edit()`` plays an operator changing fields (drift), ``restored`` lists what restores wrote,
``fail()`` injects errors and ``uninstall()`` removes an API.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from context_service.adapters.kubernetes import manifests, parse
from context_service.domain import cluster as port
from context_service.domain.cluster import (
    API_NOT_INSTALLED,
    KEPT_CURRENT_ANNOTATIONS,
    MANAGED_BY,
    MANAGER,
    NAME_LABEL,
    POOL_LABEL,
    Change,
    ClusterError,
)

JSON = dict[str, Any]
T = TypeVar("T")
Key = tuple[str, str, str]  # (plural, namespace, name); namespace "" for cluster scope
CORE = {
    "persistentvolumeclaims": ("", "v1"),
    "pods": ("", "v1"),
    "storageclasses": ("storage.k8s.io", "v1"),
}
CUSTOM = {plural: (group, version) for group, version, plural in port.CUSTOM_RESOURCES}
KINDS = {"sandbox": "sandboxes", "sandboxclaim": "sandboxclaims", "pvc": "persistentvolumeclaims"}


class _Watch:
    def __init__(self, owner: FakeCluster, entry: tuple[str | None, Callable[[Change], None]]):
        self.owner, self.entry = owner, entry

    def stop(self) -> None:
        if self.entry in self.owner.watchers:
            self.owner.watchers.remove(self.entry)


class FakeCluster:
    def __init__(self, now: Callable[[], datetime] = lambda: datetime(2026, 1, 1, tzinfo=UTC)):
        self.now = now
        self.objects: dict[Key, JSON] = {}
        self.installed: set[str] = set(CUSTOM)
        self.failures: dict[str, list[ClusterError]] = {}
        self.calls: list[tuple[str, ...]] = []
        self.watchers: list[tuple[str | None, Callable[[Change], None]]] = []
        self.hold_deletes = False  # True: deletes only mark deletionTimestamp (finish_deletes)
        self.restored: list[Key] = []  # objects a restore wrote, in order
        self._uids = itertools.count(1)

    # --- test controls ----------------------------------------------------------------------

    def fail(self, operation: str, error: ClusterError, times: int = 1) -> None:
        """Make the next ``times`` calls of port method ``operation`` raise ``error``."""
        self.failures.setdefault(operation, []).extend([error] * times)

    def uninstall(self, plural: str) -> None:
        self.installed.discard(plural)

    def manifest(self, plural: str, namespace: str, name: str) -> JSON | None:
        return copy.deepcopy(self.objects.get((plural, namespace, name)))

    def edit(self, plural: str, namespace: str, name: str, patch: JSON) -> None:
        """An operator's edit: a JSON merge patch (``kubectl patch --type merge``), so a None
        value removes the key and a list is replaced whole."""
        key = (plural, namespace, name)
        self.objects[key] = _merge(self.objects[key], patch)
        self._notify(*key)

    def put(self, plural: str, item: JSON) -> JSON:
        """Store ``item`` as the cluster would (uid, creation time), replacing any same name."""
        item = copy.deepcopy(item)
        m = item.setdefault("metadata", {})
        m.setdefault("uid", f"uid-{next(self._uids)}")
        m.setdefault("creationTimestamp", self.now().strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.objects[(plural, m.get("namespace", ""), m["name"])] = item
        self._notify(plural, m.get("namespace", ""), m["name"])
        return item

    def add_storage_class(
        self,
        name: str,
        provisioner: str,
        default: bool = False,
        beta_default: bool = False,
        **fields: Any,
    ) -> None:
        annotations = {}
        if default:
            annotations["storageclass.kubernetes.io/is-default-class"] = "true"
        if beta_default:
            annotations["storageclass.beta.kubernetes.io/is-default-class"] = "true"
        meta = {"name": name, "annotations": annotations}
        self.put("storageclasses", {"metadata": meta, "provisioner": provisioner, **fields})

    def add_snapshot_class(self, name: str, driver: str, default: bool = False) -> None:
        annotations = {port.DEFAULT_SNAPSHOT_CLASS_ANNOTATION: "true"} if default else {}
        meta = {"name": name, "annotations": annotations}
        self.put(
            "volumesnapshotclasses",
            {"metadata": meta, "driver": driver, "deletionPolicy": "Delete"},
        )

    def add_template(self, namespace: str, name: str, spec: JSON | None) -> None:
        item: JSON = {"metadata": {"namespace": namespace, "name": name}}
        if spec is not None:
            item["spec"] = spec
        self.put("sandboxtemplates", item)

    def add_warm_pool(self, namespace: str, name: str, template: str, replicas: int = 1) -> None:
        spec = {"replicas": replicas, "sandboxTemplateRef": {"name": template}}
        self.put(
            "sandboxwarmpools", {"metadata": {"namespace": namespace, "name": name}, "spec": spec}
        )

    def add_claim(
        self,
        namespace: str,
        name: str,
        size: str = "1Gi",
        access_modes: tuple[str, ...] = ("ReadWriteOnce",),
        storage_class: str = "",
        phase: str = "Bound",
        labels: dict[str, str] | None = None,
    ) -> None:
        """A PVC made by someone else (an existing claim)."""
        spec: JSON = {
            "accessModes": list(access_modes),
            "resources": {"requests": {"storage": size}},
        }
        if storage_class:
            spec["storageClassName"] = storage_class
        meta = {"namespace": namespace, "name": name, "labels": labels or {}}
        self.put(
            "persistentvolumeclaims", {"metadata": meta, "spec": spec, "status": {"phase": phase}}
        )

    def add_pod(
        self,
        namespace: str,
        name: str,
        claims: dict[str, bool] | None = None,
        service_account: str = "",
        phase: str = "Running",
        ready: bool = True,
        labels: dict[str, str] | None = None,
        deleting: bool = False,
    ) -> None:
        """A Pod mounting ``claims`` (claim name -> mounted readOnly) in one container."""
        volumes = [
            {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
            for i, c in enumerate(claims or {})
        ]
        mounts = [
            {"name": f"v{i}", "mountPath": f"/m{i}", "readOnly": ro}
            for i, ro in enumerate((claims or {}).values())
        ]
        spec: JSON = {
            "containers": [{"name": "c", "image": "x", "volumeMounts": mounts}],
            "volumes": volumes,
        }
        if service_account:
            spec["serviceAccountName"] = service_account
        meta: JSON = {"namespace": namespace, "name": name, "labels": labels or {}}
        if deleting:
            meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
        self.put(
            "pods",
            {"metadata": meta, "spec": spec, "status": {"phase": phase, "conditions": conditions}},
        )

    def set_claim_phase(
        self, namespace: str, name: str, phase: str, storage_class: str = ""
    ) -> None:
        item = self.objects[("persistentvolumeclaims", namespace, name)]
        item.setdefault("status", {})["phase"] = phase
        if storage_class:
            item["spec"]["storageClassName"] = storage_class
        self._notify("persistentvolumeclaims", namespace, name)

    def set_ready(
        self,
        plural: str,
        namespace: str,
        name: str,
        ready: bool = True,
        reason: str = "DependenciesReady",
    ) -> None:
        """Write a Ready condition on a Sandbox or SandboxClaim."""
        item = self.objects[(plural, namespace, name)]
        condition = {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": reason,
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        item.setdefault("status", {})["conditions"] = [condition]
        self._notify(plural, namespace, name)

    def set_snapshot_status(
        self,
        namespace: str,
        name: str,
        ready: bool = True,
        error: str = "",
        restore_size: str = "1Gi",
    ) -> None:
        status: JSON = {"readyToUse": ready}
        if ready:
            status["restoreSize"] = restore_size
        if error:
            status["error"] = {"message": error, "time": "2026-01-01T00:00:00Z"}
        self.objects[("volumesnapshots", namespace, name)]["status"] = status
        self._notify("volumesnapshots", namespace, name)

    def finish_deletes(self) -> None:
        for key in [k for k, v in self.objects.items() if v["metadata"].get("deletionTimestamp")]:
            self.objects.pop(key)
            self._notify(*key, deleted=True)

    # --- plumbing ---------------------------------------------------------------------------

    def _call(self, operation: str, *args: str) -> None:
        self.calls.append((operation, *args))
        pending = self.failures.get(operation)
        if pending:
            raise pending.pop(0)

    def _require(self, plural: str) -> None:
        if plural in CUSTOM and plural not in self.installed:
            raise ClusterError(404, API_NOT_INSTALLED, f"{plural} not installed")

    def _notify(self, plural: str, namespace: str, name: str, deleted: bool = False) -> None:
        for scope, callback in list(self.watchers):
            if scope is None or scope == namespace:
                callback(Change(kind=plural, namespace=namespace, name=name, deleted=deleted))

    def _get(self, plural: str, namespace: str, name: str) -> JSON | None:
        if plural in CUSTOM and plural not in self.installed:
            return None
        return self.objects.get((plural, namespace, name))

    def _read(
        self, operation: str, plural: str, namespace: str, name: str, parser: Callable[[JSON], T]
    ) -> T | None:
        self._call(operation, namespace, name)
        item = self._get(plural, namespace, name)
        return parser(item) if item is not None else None

    def _list(
        self, plural: str, namespace: str | None, selector: dict[str, str | None]
    ) -> list[JSON]:
        if plural in CUSTOM and plural not in self.installed:
            return []
        found = []
        for (kind, ns, _), item in sorted(self.objects.items()):
            labels = item["metadata"].get("labels") or {}
            if kind != plural or (namespace is not None and ns != namespace):
                continue
            if all(k in labels and (v is None or labels[k] == v) for k, v in selector.items()):
                found.append(item)
        return found

    def _create(self, plural: str, item: JSON) -> bool:
        self._require(plural)
        m = item["metadata"]
        if (plural, m.get("namespace", ""), m["name"]) in self.objects:
            return False
        self.put(plural, item)
        return True

    def _delete(self, plural: str, namespace: str, name: str) -> bool:
        item = self._get(plural, namespace, name)
        if item is None:
            return False
        if self.hold_deletes:
            item["metadata"].setdefault("deletionTimestamp", "2026-01-01T00:00:00Z")
            self._notify(plural, namespace, name)
        else:
            del self.objects[(plural, namespace, name)]
            self._notify(plural, namespace, name, deleted=True)
        return True

    # --- the port ---------------------------------------------------------------------------

    def has_resource(self, group: str, version: str, plural: str) -> bool:
        self._call("has_resource", group, version, plural)
        if plural in CUSTOM:
            return CUSTOM[plural] == (group, version) and plural in self.installed
        return CORE.get(plural) == (group, version)

    def list_storage_classes(self) -> list[port.StorageClassInfo]:
        self._call("list_storage_classes")
        return [parse.storage_class(i) for i in self._list("storageclasses", None, {})]

    def get_claim(self, namespace: str, name: str) -> port.ClaimInfo | None:
        return self._read("get_claim", "persistentvolumeclaims", namespace, name, parse.claim)

    def ensure_context_claim(self, claim: port.ContextClaim) -> bool:
        self._call("ensure_context_claim", claim.namespace, claim.context)
        desired = manifests.context_claim(claim)
        if self._create("persistentvolumeclaims", desired):
            return True
        m = self.objects[("persistentvolumeclaims", claim.namespace, desired["metadata"]["name"])]
        m = m["metadata"]
        m["labels"] = {**(m.get("labels") or {}), **desired["metadata"]["labels"]}
        annotations = {
            k: v
            for k, v in (m.get("annotations") or {}).items()
            if k not in KEPT_CURRENT_ANNOTATIONS
        }
        m["annotations"] = {**annotations, **claim.annotations}
        return False

    def ensure_workspace_claim(self, claim: port.WorkspaceClaim) -> bool:
        self._call("ensure_workspace_claim", claim.namespace, claim.pool)
        return self._create("persistentvolumeclaims", manifests.workspace_claim(claim))

    def delete_claim(self, namespace: str, name: str) -> bool:
        self._call("delete_claim", namespace, name)
        return self._delete("persistentvolumeclaims", namespace, name)

    def list_context_claims(self, namespace: str | None = None) -> list[port.ClaimInfo]:
        self._call("list_context_claims")
        items = self._list(
            "persistentvolumeclaims", namespace, {MANAGED_BY: MANAGER, NAME_LABEL: None}
        )
        return [parse.claim(i) for i in items]

    def list_claim_consumers(self, namespace: str, claim: str) -> list[port.PodConsumer]:
        self._call("list_claim_consumers", namespace, claim)
        found = (parse.consumer(p, claim) for p in self._list("pods", namespace, {}))
        return [c for c in found if c is not None]

    def get_sandbox_template(self, namespace: str, name: str) -> port.SandboxTemplateInfo | None:
        return self._read(
            "get_sandbox_template", "sandboxtemplates", namespace, name, parse.sandbox_template
        )

    def get_warm_pool(self, namespace: str, name: str) -> port.WarmPoolInfo | None:
        return self._read("get_warm_pool", "sandboxwarmpools", namespace, name, parse.warm_pool)

    def get_sandbox(self, namespace: str, name: str) -> port.SandboxInfo | None:
        return self._read("get_sandbox", "sandboxes", namespace, name, parse.sandbox)

    def ensure_sandbox(self, sandbox: port.PoolSandbox) -> bool:
        self._call("ensure_sandbox", sandbox.namespace, sandbox.pool, str(sandbox.index))
        return self._create("sandboxes", manifests.sandbox(sandbox))

    def delete_sandbox(self, namespace: str, name: str) -> bool:
        self._call("delete_sandbox", namespace, name)
        return self._delete("sandboxes", namespace, name)

    def get_sandbox_claim(self, namespace: str, name: str) -> port.SandboxClaimInfo | None:
        return self._read(
            "get_sandbox_claim", "sandboxclaims", namespace, name, parse.sandbox_claim
        )

    def ensure_sandbox_claim(self, claim: port.PoolSandboxClaim) -> bool:
        self._call("ensure_sandbox_claim", claim.namespace, claim.pool, str(claim.index))
        return self._create("sandboxclaims", manifests.sandbox_claim(claim))

    def delete_sandbox_claim(self, namespace: str, name: str) -> bool:
        self._call("delete_sandbox_claim", namespace, name)
        return self._delete("sandboxclaims", namespace, name)

    def list_pool_objects(
        self, namespace: str, pool: str | None = None, wanted: Iterable[port.PoolObject] = ()
    ) -> port.PoolObjects:
        self._call("list_pool_objects", namespace, pool or "")
        managed: dict[str, str | None] = {MANAGED_BY: MANAGER, POOL_LABEL: pool}
        raw = {kind: self._list(plural, namespace, managed) for kind, plural in KINDS.items()}
        found = {(kind, i["metadata"]["name"]): i for kind, items in raw.items() for i in items}
        return port.PoolObjects(
            sandboxes=tuple(parse.sandbox(i) for i in raw["sandbox"]),
            sandbox_claims=tuple(parse.sandbox_claim(i) for i in raw["sandboxclaim"]),
            claims=tuple(parse.claim(i) for i in raw["pvc"]),
            pods=tuple(parse.pod(i) for i in self._list("pods", namespace, {POOL_LABEL: pool})),
            drift=manifests.drift(wanted, found),
        )

    def restore_workspace_claim(self, claim: port.WorkspaceClaim) -> bool:
        return self._restore("restore_workspace_claim", claim)

    def restore_sandbox(self, sandbox: port.PoolSandbox) -> bool:
        return self._restore("restore_sandbox", sandbox)

    def restore_sandbox_claim(self, claim: port.PoolSandboxClaim) -> bool:
        return self._restore("restore_sandbox_claim", claim)

    def _restore(self, operation: str, desired: port.PoolObject) -> bool:
        """A forced server-side apply of the owned fields: they are merged over the object
        (a list whole), everything else stays. Like the server, an absent object is created
        from them, which a PVC's labels alone cannot be."""
        kind, body = manifests.owned(desired)
        key = (KINDS[kind], desired.namespace, body["metadata"]["name"])
        self._call(operation, *key[1:])
        self._require(key[0])
        current = self.objects.get(key)
        if current is None and kind == "pvc":
            raise ClusterError(422, "Invalid", f"{key[2]}: spec.accessModes: Required value")
        if current is None:
            self.put(key[0], body)
        else:
            self.objects[key] = _merge(current, body)
        self.restored.append(key)
        self._notify(*key)
        return True

    def list_snapshot_classes(self) -> list[port.SnapshotClassInfo]:
        self._call("list_snapshot_classes")
        self._require("volumesnapshotclasses")
        return [parse.snapshot_class(i) for i in self._list("volumesnapshotclasses", None, {})]

    def ensure_snapshot(self, snapshot: port.ContextSnapshot) -> bool:
        self._call("ensure_snapshot", snapshot.namespace, snapshot.context, snapshot.snapshot)
        return self._create("volumesnapshots", manifests.volume_snapshot(snapshot))

    def get_snapshot(self, namespace: str, name: str) -> port.SnapshotInfo | None:
        return self._read("get_snapshot", "volumesnapshots", namespace, name, parse.snapshot)

    def delete_snapshot(self, namespace: str, name: str) -> bool:
        self._call("delete_snapshot", namespace, name)
        return self._delete("volumesnapshots", namespace, name)

    def list_snapshots(self, namespace: str, context: str | None = None) -> list[port.SnapshotInfo]:
        self._call("list_snapshots", namespace, context or "")
        selector: dict[str, str | None] = {MANAGED_BY: MANAGER, NAME_LABEL: context}
        return [parse.snapshot(i) for i in self._list("volumesnapshots", namespace, selector)]

    def apply_query_mirror(self, mirror: port.QueryIndexMirror) -> None:
        self._call("apply_query_mirror", mirror.namespace, mirror.context)
        self.put("configmaps", manifests.query_mirror(mirror))

    def delete_query_mirror(self, namespace: str, context: str) -> bool:
        self._call("delete_query_mirror", namespace, context)
        return self._delete("configmaps", namespace, port.query_mirror_name(context))

    def get_query_mirror(self, namespace: str, context: str) -> str | None:
        found = self.objects.get(("configmaps", namespace, port.query_mirror_name(context)))
        value = ((found or {}).get("data") or {}).get("index.json")
        return value if isinstance(value, str) else None

    def watch(self, namespace: str | None, on_change: Callable[[Change], None]) -> _Watch:
        entry = (namespace, on_change)
        self.watchers.append(entry)
        return _Watch(self, entry)


def _merge(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge key by key (None removes a key); anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = _merge(merged.get(key), value)
    return merged


if TYPE_CHECKING:
    _conforms: port.Cluster = FakeCluster()
