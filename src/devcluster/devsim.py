"""DEVELOPMENT STAND-IN for the node-side controllers a local API server lacks. Not for clusters.

It plays, through the ``/status`` subresources, the PV binder, the kubelet, the agent-sandbox
Sandbox and SandboxClaim controllers and the CSI snapshotter (and optionally the garbage
collector), following the rules in docs/kubernetes.md. Everything it reports is our model of
those controllers; Pods never run and volumes hold nothing. Tests call ``settle()``; the local
control plane runs it as a watch-driven loop thread (``start()``/``stop()``).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from context_service.adapters.kubernetes.cluster import (
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SNAPSHOT,
)
from context_service.adapters.kubernetes.cluster import WARM_POOL as WARM_POOLS
from context_service.adapters.kubernetes.parse import (
    meta,
    mounted_claims,
    obj,
    ready_condition,
    text,
)
from context_service.adapters.kubernetes.rest import (
    JSON,
    PODS,
    PVCS,
    STORAGE_CLASSES,
    Resource,
    Rest,
)
from context_service.adapters.kubernetes.watch import ClusterWatch
from context_service.devcluster import devsim_gc
from context_service.devcluster.devsim_objects import (
    claimed_sandbox,
    condition,
    now,
    sandbox_children,
)
from context_service.domain.cluster import Change, ClusterError

log = logging.getLogger(__name__)
MANAGER = "dev-simulator"
NODE = "sim-node"


class DevSimulator:
    """One idempotent pass per role; ``settle()`` runs a few passes over ``namespace`` (or all)."""

    def __init__(
        self, rest: Rest, namespace: str | None = None, *, collect_garbage: bool = True
    ) -> None:
        self.rest = rest
        self.namespace = namespace
        self.collect_garbage = collect_garbage
        self._ips = 0
        self._ip_lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: ClusterWatch | None = None

    # --- public -----------------------------------------------------------------------------

    def settle(self, passes: int = 4) -> None:
        for _ in range(passes):
            self.run_once()

    def run_once(self) -> None:
        self.claims_pass()
        self.sandboxes_pass()
        self.binder_pass()
        self.kubelet_pass()
        self.sandboxes_pass()
        self.claims_pass()
        self.snapshots_pass()
        if self.collect_garbage:
            devsim_gc.collect(self.rest, self.namespace)

    def fail_snapshot(self, namespace: str, name: str, message: str) -> None:
        status = {"readyToUse": False, "error": {"message": message, "time": now()}}
        self._status(SNAPSHOT, namespace, name, status)

    def start(self, interval: float = 2.0) -> DevSimulator:
        """Run passes in a daemon thread, on every watched change and every ``interval``."""
        resources = (PVCS, PODS, SANDBOX, SANDBOX_CLAIM, SNAPSHOT)
        self._watch = ClusterWatch(self.rest, resources, self.namespace, self._changed).start()
        self._thread = threading.Thread(
            target=self._loop, args=(interval,), name="dev-simulator", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._watch is not None:
            self._watch.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)

    # --- loop -------------------------------------------------------------------------------

    def _changed(self, change: Change) -> None:
        self._wake.set()

    def _loop(self, interval: float) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.run_once()
            except ClusterError as exc:
                log.warning("dev simulator pass failed: %s", exc)
            self._wake.wait(interval)
            self._stop.wait(0.1)  # coalesce bursts of events into one pass

    # --- helpers ----------------------------------------------------------------------------

    def _list(self, res: Resource, namespace: str | None = None) -> list[JSON]:
        try:
            return self.rest.items(res.path(namespace or self.namespace))
        except ClusterError as exc:
            if exc.status == 404:  # CRD not installed
                return []
            raise

    def _get(self, res: Resource, namespace: str, name: str) -> JSON | None:
        return self.rest.find(res.path(namespace, name))

    def _status(self, res: Resource, namespace: str, name: str, status: JSON) -> None:
        try:
            self.rest.patch(res.path(namespace, name, "status"), {"status": status}, MANAGER)
        except ClusterError as exc:
            if exc.status != 404:  # gone meanwhile
                raise

    def _create(self, res: Resource, namespace: str, body: JSON) -> None:
        try:
            self.rest.create(res.path(namespace), body, MANAGER)
        except ClusterError as exc:
            if exc.status != 409:
                raise

    def _set_ready(self, res: Resource, item: JSON, status: JSON) -> None:
        """Write ``status`` (holding a Ready condition) only when something changed, keeping
        lastTransitionTime while the condition's status stays the same."""
        current = obj(item.get("status"))
        new = status["conditions"][0]
        old = next(
            (c for c in current.get("conditions") or [] if obj(c).get("type") == "Ready"), None
        )
        if old is not None and old.get("status") == new["status"]:
            new["lastTransitionTime"] = old.get("lastTransitionTime") or new["lastTransitionTime"]
        if all(current.get(k) == v for k, v in status.items()):
            return
        m = meta(item)
        self._status(res, m["namespace"], m["name"], status)

    # --- PV binder --------------------------------------------------------------------------

    def binder_pass(self) -> None:
        waiting = {
            meta(sc)["name"]
            for sc in self.rest.items(STORAGE_CLASSES.path())
            if sc.get("volumeBindingMode") == "WaitForFirstConsumer"
        }
        pvcs = [p for p in self._list(PVCS) if self._bindable(p)]
        if not pvcs:
            return
        mounted = {
            (meta(pod)["namespace"], claim)
            for pod in self._list(PODS)
            for claim in mounted_claims(pod).values()
        }
        for pvc in pvcs:
            m, spec = meta(pvc), obj(pvc.get("spec"))
            if (
                spec.get("storageClassName") in waiting
                and (m["namespace"], m["name"]) not in mounted
            ):
                continue  # WaitForFirstConsumer: bind once a Pod mounts it
            size = obj(obj(spec.get("resources")).get("requests")).get("storage")
            status = {
                "phase": "Bound",
                "accessModes": spec.get("accessModes"),
                "capacity": {"storage": size},
            }
            self._status(PVCS, m["namespace"], m["name"], status)

    def _bindable(self, pvc: JSON) -> bool:
        if meta(pvc).get("deletionTimestamp") or obj(pvc.get("status")).get("phase") == "Bound":
            return False
        source = obj(obj(pvc.get("spec")).get("dataSource"))
        if source.get("kind") != "VolumeSnapshot":
            return True
        snapshot = self._get(SNAPSHOT, meta(pvc)["namespace"], text(source.get("name")))
        return snapshot is not None and obj(snapshot.get("status")).get("readyToUse") is True

    # --- kubelet ----------------------------------------------------------------------------

    def kubelet_pass(self) -> None:
        pods = [
            p
            for p in self._list(PODS)
            if not meta(p).get("deletionTimestamp")
            and obj(p.get("status")).get("phase") in (None, "", "Pending")
        ]
        if not pods:
            return
        bound = {
            (meta(c)["namespace"], meta(c)["name"])
            for c in self._list(PVCS)
            if obj(c.get("status")).get("phase") == "Bound"
        }
        for pod in pods:
            m = meta(pod)
            if any((m["namespace"], c) not in bound for c in mounted_claims(pod).values()):
                continue  # a kubelet starts a Pod only once its volumes are bound
            ip = self._next_ip()
            stamp = now()
            status = {
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "hostIP": "127.0.0.1",
                "startTime": stamp,
                "conditions": [
                    {"type": t, "status": "True", "lastTransitionTime": stamp}
                    for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
                ],
            }
            self._status(PODS, m["namespace"], m["name"], status)

    def _next_ip(self) -> str:
        with self._ip_lock:
            self._ips += 1
            return f"10.244.{self._ips // 250}.{self._ips % 250 + 2}"

    # --- agent-sandbox: Sandbox -------------------------------------------------------------

    def sandboxes_pass(self) -> None:
        for sandbox in self._list(SANDBOX):
            if not meta(sandbox).get("deletionTimestamp"):
                self._reconcile_sandbox(sandbox)

    def _reconcile_sandbox(self, sandbox: JSON) -> None:
        m, spec = meta(sandbox), obj(sandbox.get("spec"))
        namespace, name = m["namespace"], m["name"]
        pod = self._get(PODS, namespace, name)
        if spec.get("operatingMode") == "Suspended":
            if pod is not None:
                self.rest.delete(PODS.path(namespace, name))
            self._set_ready(
                SANDBOX, sandbox, {"conditions": [condition(False, "SandboxSuspended")]}
            )
            return
        if pod is None:
            try:
                self._create_sandbox_objects(sandbox)
            except ClusterError as exc:
                failed = condition(False, "ReconcilerError", exc.message)
                self._set_ready(SANDBOX, sandbox, {"conditions": [failed]})
                return
            pod = self._get(PODS, namespace, name)
        pod_ready = pod is not None and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in obj(pod.get("status")).get("conditions") or []
        )
        if pod_ready and pod is not None:
            ip = text(obj(pod.get("status")).get("podIP"))
            status = {
                "conditions": [condition(True, "DependenciesReady")],
                "podIPs": [ip],
                "nodeName": NODE,
            }
        else:
            status = {"conditions": [condition(False, "DependenciesNotReady")]}
        self._set_ready(SANDBOX, sandbox, status)

    def _create_sandbox_objects(self, sandbox: JSON) -> None:
        pvcs, pod = sandbox_children(sandbox)
        for pvc in pvcs:
            self._create(PVCS, meta(sandbox)["namespace"], pvc)
        self._create(PODS, meta(sandbox)["namespace"], pod)

    # --- agent-sandbox: SandboxClaim --------------------------------------------------------

    def claims_pass(self) -> None:
        for claim in self._list(SANDBOX_CLAIM):
            if not meta(claim).get("deletionTimestamp"):
                self._reconcile_claim(claim)

    def _reconcile_claim(self, claim: JSON) -> None:
        m, spec = meta(claim), obj(claim.get("spec"))
        namespace, name = m["namespace"], m["name"]
        sandbox = self._get(SANDBOX, namespace, name)
        if sandbox is None:
            pool_name = text(obj(spec.get("warmPoolRef")).get("name"))
            pool = self._get(WARM_POOLS, namespace, pool_name) if pool_name else None
            template_ref = obj(obj(obj(pool).get("spec")).get("sandboxTemplateRef"))
            template_name = text(template_ref.get("name"))
            template = (
                self._get(SANDBOX_TEMPLATE, namespace, template_name) if template_name else None
            )
            if pool is None or template is None or meta(pool).get("deletionTimestamp"):
                failed = condition(
                    False, "WarmPoolNotReady", _unready(pool_name, pool, template_name)
                )
                self._set_ready(SANDBOX_CLAIM, claim, {"conditions": [failed]})
                return
            self._create(SANDBOX, namespace, claimed_sandbox(claim, template))
            sandbox = self._get(SANDBOX, namespace, name)
        ready, reason = ready_condition(sandbox or {})
        ips = obj(obj(sandbox or {}).get("status")).get("podIPs") or []
        status: JSON = {
            "conditions": [condition(ready, reason or "DependenciesNotReady")],
            "sandbox": {"name": name, "podIPs": ips} if ready else {"name": name},
        }
        self._set_ready(SANDBOX_CLAIM, claim, status)

    # --- CSI snapshotter --------------------------------------------------------------------

    def snapshots_pass(self) -> None:
        for snapshot in self._list(SNAPSHOT):
            m, status = meta(snapshot), obj(snapshot.get("status"))
            if m.get("deletionTimestamp") or status.get("readyToUse") or status.get("error"):
                continue
            source = text(
                obj(obj(snapshot.get("spec")).get("source")).get("persistentVolumeClaimName")
            )
            pvc: Any = self._get(PVCS, m["namespace"], source) if source else None
            if pvc is None or obj(pvc.get("status")).get("phase") != "Bound":
                continue
            ready = {
                "readyToUse": True,
                "restoreSize": obj(obj(pvc.get("status")).get("capacity")).get("storage"),
                "creationTime": now(),
                "boundVolumeSnapshotContentName": f"snapcontent-{m['uid']}",
            }
            self._status(SNAPSHOT, m["namespace"], m["name"], ready)


def _unready(pool_name: str, pool: JSON | None, template_name: str) -> str:
    """Why a warm pool serves no new claim. One being deleted takes its pre-started sandboxes
    with it; a claim it served before keeps its own."""
    if pool is None:
        return f'warm pool "{pool_name}" not found'
    if meta(pool).get("deletionTimestamp"):
        return f'warm pool "{pool_name}" is being deleted'
    return f'template "{template_name}" not found'
