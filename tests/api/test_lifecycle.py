"""Lifecycle routes through HTTP (spec 1.11) against the session kube-apiserver with the project's
CRDs: snapshots (create, list, get, every class error), the snapshot worker and the stand-in
marking them ready or failed, clones, restore and capabilities. Retention and GC: test_lifecycle_gc.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import SNAPSHOT, SNAPSHOT_CLASS, KubernetesCluster
from context_service.adapters.kubernetes.rest import STORAGE_CLASSES, Resource
from context_service.adapters.kubernetes.snapshot_reconciler import SnapshotReconciler
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import ContextClaim, ContextSnapshot
from context_service.projections.snapshots.view import SnapshotObject, SnapshotObjectsReads
from tests.api.conftest import Api

# one service for the module: each test's contexts live in its own Kubernetes namespace
pytestmark = [pytest.mark.k8s, pytest.mark.postgres, pytest.mark.shared_service]
ALICE, BOB = "user:alice", "agent:bob"
REV = "3f" + "0ca1a1" * 10 + "a1"
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
EXISTS = {"error": "already_exists", "message": "context resource already exists"}
UNSUPPORTED = "context lifecycle operation is not supported by this storage backend: "


@dataclass
class Env:
    api: Api  # calls as alice
    container: bootstrap.Container
    worker: SnapshotReconciler
    sim: DevSimulator
    kube: KubernetesCluster
    ns: str
    driver: str  # unique to the test: the session server's cluster-scoped objects are shared
    made: list[tuple[Resource, str]] = field(default_factory=list)

    @property
    def storage_class(self) -> str:
        return f"{self.ns}-sc"

    def add_storage_class(self, name: str, driver: str, default: bool = False) -> None:
        notes = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
        self._make(STORAGE_CLASSES, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                     "metadata": {"name": name, "annotations": notes},
                                     "provisioner": driver})

    def add_snapshot_class(self, name: str, driver: str | None = None,
                           default: bool = False) -> None:
        notes = {"snapshot.storage.kubernetes.io/is-default-class": "true"} if default else {}
        self._make(SNAPSHOT_CLASS, {
            "apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
            "metadata": {"name": name, "annotations": notes}, "driver": driver or self.driver,
            "deletionPolicy": "Delete"})

    def _make(self, res: Resource, body: dict[str, Any]) -> None:
        self.kube.rest.create(res.path(), body, "test")
        self.made.append((res, body["metadata"]["name"]))

    def cleanup(self) -> None:
        for res, name in reversed(self.made):
            self.kube.rest.delete(res.path(None, name))

    def path(self, context: str, suffix: str = "") -> str:
        return f"/v1/namespaces/{self.ns}/contexts/{context}{suffix}"

    def context(self, name: str = "notes", storage_class: str | None = None,
                revision: str = REV, claim: bool = True) -> None:
        """A context (as alice) with a published revision and its bound PVC (which the main
        reconciler would create)."""
        cls = self.storage_class if storage_class is None else storage_class
        storage = {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}
        if cls:
            storage["storageClass"] = cls
        body = {"name": name, "namespace": self.ns, "type": "memory", "storage": storage}
        assert self.api.post("/v1/contexts", body).status_code == 201
        if revision:
            published = self.api.post(self.path(name, "/revisions"), {
                "id": revision, "createdAt": "2026-03-01T09:00:00Z", "operation": "sync"})
            assert published.status_code == 201
        if claim:
            self.kube.ensure_context_claim(ContextClaim(
                namespace=self.ns, context=name, type="memory", size="1Gi",
                access_mode="ReadWriteOnce", storage_class=cls))
            self.sim.settle(2)

    def snapshot(self, context: str, name: str, **body: Any) -> Any:
        return self.api.post(self.path(context, "/snapshots"), {"name": name, **body})

    def converge(self) -> None:
        """Worker creates, the stand-in snapshotter marks ready, the worker records it."""
        assert not self.worker.run_once().failures
        self.sim.settle(2)
        assert not self.worker.run_once().failures

    def grant(self, context: str, subject: str, *permissions: str) -> None:
        kind, name = subject.split(":", 1)
        answer = self.api.put(self.path(context, "/grants"), {
            "subject": {"kind": kind, "name": name}, "permissions": list(permissions)})
        assert answer.status_code == 200


class NamespaceRows:
    """The snapshot rows of one namespace: on a shared service, a test's reconciler acts on (and
    counts) the snapshots of its own contexts only, as its stand-in watches its namespace only."""

    def __init__(self, reads: SnapshotObjectsReads, namespace: str) -> None:
        self.reads = reads
        self.namespace = namespace

    def all(self) -> list[SnapshotObject]:
        return [row for row in self.reads.all() if row.namespace == self.namespace]


@pytest.fixture
def env(request: pytest.FixtureRequest, kube_cluster: KubernetesCluster, kube_ns: str,
        kube_sim: DevSimulator, module_container: bootstrap.Container) -> Iterator[Env]:
    """The module's service over the session cluster; the test's contexts, classes and
    reconciler are those of its own Kubernetes namespace."""
    module_container.cluster = kube_cluster  # before the module's application is built over it
    api: Api = request.getfixturevalue("module_api")
    worker = module_container.snapshot_worker()
    worker.reads = NamespaceRows(worker.reads, kube_ns)
    made = Env(api.as_(ALICE), module_container, worker, kube_sim, kube_cluster, kube_ns,
               f"{kube_ns}.csi.test")
    made.add_storage_class(made.storage_class, made.driver)
    try:
        yield made
    finally:
        made.cleanup()


def snapshot_json(env: Env, name: str, status: str = "creating", **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "contextName": "notes", "namespace": env.ns,
                           "revision": REV, "status": status,
                           "snapshotName": f"context-notes-{name}",
                           "snapshotClass": f"{env.ns}-snap", "sourceClaimName": "context-notes"}
    out.update(extra)
    return out


def without_time(body: dict[str, Any]) -> dict[str, Any]:
    assert body["createdAt"].endswith("Z")
    return {k: v for k, v in body.items() if k != "createdAt"}


# --- snapshots --------------------------------------------------------------------------------


def test_a_snapshot_is_taken_made_ready_and_read(env: Env) -> None:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context()
    made = env.snapshot("notes", "s1", labels={"team": "research", "protected": "TRUE"})
    assert made.status_code == 201
    assert int(made.headers["X-Context-Position"]) > 0
    body = made.json()
    assert list(body) == ["name", "contextName", "namespace", "revision", "status",
                          "snapshotName", "snapshotClass", "sourceClaimName", "createdAt",
                          "protected", "labels"]
    assert without_time(body) == snapshot_json(
        env, "s1", protected=True, labels={"team": "research", "protected": "TRUE"})

    assert env.worker.run_once().created == 1
    raw = env.kube.rest.get(SNAPSHOT.path(env.ns, "context-notes-s1"))
    assert raw["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "context-service", "context.rossoctl.io/name": "notes",
        "context.rossoctl.io/snapshot": "s1", "context.rossoctl.io/type": "memory"}
    assert raw["metadata"]["annotations"] == {
        "context.rossoctl.io/source-claim": "context-notes",
        "context.rossoctl.io/storage-size": "1Gi",
        "context.rossoctl.io/access-mode": "ReadWriteOnce",
        "context.rossoctl.io/storage-class": env.storage_class,
        "context.rossoctl.io/context-type": "memory",
        "context.rossoctl.io/source-revision": REV,
        "context.rossoctl.io/protected": "true",
        "context.rossoctl.io/snapshot-labels": '{"protected":"TRUE","team":"research"}'}
    assert raw["spec"] == {"volumeSnapshotClassName": f"{env.ns}-snap",
                           "source": {"persistentVolumeClaimName": "context-notes"}}
    assert env.api.get(env.path("notes", "/snapshots/s1")).json()["status"] == "creating"

    env.sim.settle(2)
    assert env.worker.run_once().observed == 1
    assert env.worker.run_once().observed == 0  # recorded once, only on change
    one = env.api.get(env.path("notes", "/snapshots/s1"))
    assert one.status_code == 200
    assert one.json() == {**body, "status": "ready"}
    assert env.api.get(env.path("notes", "/snapshots")).json() == {"items": [one.json()]}


def test_a_failed_snapshot_reports_the_error(env: Env) -> None:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context(revision="")
    assert env.snapshot("notes", "s1").status_code == 201
    env.worker.run_once()
    env.sim.fail_snapshot(env.ns, "context-notes-s1", "driver exploded")
    assert env.worker.run_once().observed == 1
    got = env.api.get(env.path("notes", "/snapshots/s1")).json()
    assert "revision" not in got
    assert (got["status"], got["error"]) == ("failed", "driver exploded")
    assert "protected" not in got and "labels" not in got


def test_snapshots_are_listed_oldest_first_and_empty_lists_are_items(env: Env) -> None:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context()
    assert env.api.get(env.path("notes", "/snapshots")).json() == {"items": []}
    for name in ("zeta", "alpha", "mid"):
        assert env.snapshot("notes", name).status_code == 201
    listed = env.api.get(env.path("notes", "/snapshots")).json()["items"]
    assert [s["name"] for s in listed] == ["zeta", "alpha", "mid"]


def test_snapshot_class_resolution_errors(env: Env) -> None:
    env.context()
    env.add_storage_class(f"{env.ns}-other", f"{env.ns}.other.csi")
    env.add_snapshot_class(f"{env.ns}-foreign", f"{env.ns}.other.csi")
    none = env.snapshot("notes", "s1")
    assert (none.status_code, none.json()) == (501, {"error": "unsupported", "message": (
        UNSUPPORTED + f'no VolumeSnapshotClass for storage driver "{env.driver}"')})

    mismatched = env.snapshot("notes", "s1", snapshotClass=f"{env.ns}-foreign")
    assert (mismatched.status_code, mismatched.json()["message"]) == (400, (
        f'invalid context resource: snapshot class "{env.ns}-foreign" does not match storage '
        f'driver "{env.driver}"'))

    env.add_snapshot_class(f"{env.ns}-b")
    env.add_snapshot_class(f"{env.ns}-a")
    several = env.snapshot("notes", "s1")
    assert (several.status_code, several.json()) == (400, {"error": "invalid_request", "message": (
        f'invalid context resource: multiple VolumeSnapshotClasses match storage driver '
        f'"{env.driver}"; specify snapshotClass')})
    explicit = env.snapshot("notes", "s1", snapshotClass=f"{env.ns}-b")
    assert (explicit.status_code, explicit.json()["snapshotClass"]) == (201, f"{env.ns}-b")

    env.add_snapshot_class(f"{env.ns}-c", default=True)
    assert env.snapshot("notes", "s2").json()["snapshotClass"] == f"{env.ns}-c"


def test_a_context_whose_storage_class_is_unknown_cannot_be_snapshotted(env: Env) -> None:
    env.context(storage_class=f"{env.ns}-missing", claim=False)
    answer = env.snapshot("notes", "s1")
    assert (answer.status_code, answer.json()["message"]) == (
        400, f'invalid context resource: storage class "{env.ns}-missing" not found')


def test_a_context_without_any_storage_class_cannot_be_snapshotted(env: Env) -> None:
    if any(c.default for c in env.kube.list_storage_classes()):
        pytest.skip("the shared server holds a default StorageClass")
    env.context(storage_class="", claim=False)
    answer = env.snapshot("notes", "s1")
    assert (answer.status_code, answer.json()["message"]) == (
        400, "invalid context resource: context PVC has no storage class")
    caps = env.api.get(env.path("notes", "/capabilities")).json()
    assert caps == {"snapshots": False, "clones": False, "restore": False,
                    "reason": "invalid context resource: context PVC has no storage class"}


def test_the_default_storage_class_stands_in_for_a_missing_one(env: Env) -> None:
    if any(c.default for c in env.kube.list_storage_classes()):
        pytest.skip("the shared server holds a default StorageClass")
    env.add_storage_class(f"{env.ns}-default", env.driver, default=True)
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context(storage_class="", claim=False)
    assert env.snapshot("notes", "s1").status_code == 201
    env.worker.run_once()
    raw = env.kube.rest.get(SNAPSHOT.path(env.ns, "context-notes-s1"))
    assert raw["metadata"]["annotations"]["context.rossoctl.io/storage-class"] == (
        f"{env.ns}-default")


def test_snapshot_names_permissions_and_conflicts(env: Env) -> None:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context()
    env.grant("notes", BOB, "read")
    assert env.api.as_(BOB).post(env.path("notes", "/snapshots"), {"name": "s1"}).json() == (
        NOT_FOUND)
    assert env.api.post(env.path("nope", "/snapshots"), {"name": "s1"}).status_code == 404
    for bad in ("", "S1", "a" * 64, "a.b"):
        answer = env.snapshot("notes", bad)
        assert (answer.status_code, answer.json()) == (400, {
            "error": "invalid_request", "message": "snapshot must be a Kubernetes name"})
    unknown = env.api.post(env.path("notes", "/snapshots"), {"name": "s1", "owner": "x"})
    assert unknown.status_code == 400
    assert env.snapshot("notes", "s1").status_code == 201
    again = env.snapshot("notes", "s1")
    assert (again.status_code, again.json()) == (409, EXISTS)

    env.kube.ensure_snapshot(ContextSnapshot(
        namespace=env.ns, context="notes", snapshot="taken", type="memory",
        snapshot_class=f"{env.ns}-snap", size="1Gi", access_mode="ReadWriteOnce",
        storage_class=env.storage_class))
    occupied = env.snapshot("notes", "taken")
    assert (occupied.status_code, occupied.json()) == (409, EXISTS)


def test_snapshot_reads_need_read(env: Env) -> None:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context()
    env.snapshot("notes", "s1")
    env.grant("notes", BOB, "administer")
    for path in ("/snapshots", "/snapshots/s1", "/capabilities"):
        assert env.api.as_(BOB).get(env.path("notes", path)).json() == NOT_FOUND
        assert env.api.get(env.path("other", path)).status_code == 404
    assert env.api.get(env.path("notes", "/snapshots/s2")).json() == NOT_FOUND


# --- clones and restore -----------------------------------------------------------------------


def test_a_ready_snapshot_is_cloned_into_a_new_context(env: Env) -> None:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context()
    env.grant("notes", BOB, "read", "derive")
    env.snapshot("notes", "s1")
    env.converge()
    answer = env.api.as_(BOB).post(env.path("notes", "/clones"),
                                   {"name": "copy", "snapshot": "s1"})
    assert answer.status_code == 201
    body = answer.json()
    created = body["revisions"][0]["createdAt"]
    assert body == {
        "name": "copy", "namespace": env.ns, "type": "memory", "status": "provisioning",
        "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce",
                    "storageClass": env.storage_class},
        "attachment": {"kind": "pvc", "claimName": "context-copy"}, "currentRevision": REV,
        "revisions": [{"id": REV, "createdAt": created, "operation": "clone",
                       "producer": "context-service",
                       "sources": [{"context": "notes", "type": "memory", "revision": REV}],
                       "files": 0, "bytes": 0}]}
    owned = env.api.as_(BOB).get(env.path("copy"))
    assert owned.json()["effectiveAccess"] == ["read", "write", "attach", "derive", "administer"]
    audit = env.api.as_(BOB).get(env.path("copy", "/audit")).json()["items"]
    assert [(a["action"], a["subject"]) for a in audit] == [
        ("context.created", {"kind": "agent", "name": "bob"})]
    _, state = env.container.contexts.load(env.ns, "copy")
    assert state.clone_of is not None
    assert (state.clone_of.context, state.clone_of.snapshot, state.clone_of.revision) == (
        "notes", "s1", REV)


def test_clone_errors_in_the_documented_order(env: Env) -> None:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context()
    env.context("taken", claim=False)
    env.snapshot("notes", "pending")
    env.snapshot("notes", "s1")
    env.converge()
    env.snapshot("notes", "late")
    env.grant("notes", BOB, "read", "write")
    clones = env.path("notes", "/clones")

    def status(body: dict[str, Any], who: Api | None = None) -> tuple[int, str]:
        answer = (who or env.api).post(clones, body)
        return answer.status_code, answer.json()["message"]

    assert status({"name": "x", "snapshot": "s1"}, env.api.as_(BOB)) == (
        404, "context resource not found")
    assert status({"name": "Bad", "snapshot": "Bad"}) == (
        400, "name must be a lowercase Kubernetes name no longer than 50 characters")
    assert status({"name": "a" * 51, "snapshot": "s1"})[0] == 400
    assert status({"name": "copy", "snapshot": "a" * 64}) == (
        400, "snapshot must be a Kubernetes name")
    assert status({"name": "copy", "snapshot": "missing"}) == (404, "context resource not found")
    assert status({"name": "copy", "snapshot": "late"}) == (
        400, 'invalid context resource: snapshot "late" is not ready')
    assert status({"name": "taken", "snapshot": "s1"}) == (409, "context resource already exists")
    env.kube.ensure_context_claim(ContextClaim(namespace=env.ns, context="orphan", type="state",
                                               size="1Gi", access_mode="ReadWriteOnce"))
    assert status({"name": "orphan", "snapshot": "s1"}) == (
        409, "context resource already exists")
    assert env.api.post(clones, raw=b"").json()["message"] == "request body is required"


def test_restore_is_unsupported_on_the_pvc_backend(env: Env) -> None:
    env.context(claim=False)
    env.grant("notes", BOB, "read")
    restore = env.path("notes", "/restore")
    assert env.api.as_(BOB).post(restore, {"snapshot": "s1"}).json() == NOT_FOUND
    bad = env.api.post(restore, {"snapshot": "S1"})
    assert (bad.status_code, bad.json()["message"]) == (400, "snapshot must be a Kubernetes name")
    assert env.api.post(restore, {"snapshot": "s1", "x": 1}).status_code == 400
    answer = env.api.post(restore, {"snapshot": "s1"})
    assert (answer.status_code, answer.json()) == (501, {"error": "unsupported", "message": (
        UNSUPPORTED + "CSI cannot replace an existing PVC atomically; clone the snapshot into "
                      "a new context")})


# --- capabilities -----------------------------------------------------------------------------


def test_capabilities_with_and_without_a_snapshot_class(env: Env) -> None:
    env.context(claim=False)
    caps = env.path("notes", "/capabilities")
    assert env.api.get(caps).json() == {
        "snapshots": False, "clones": False, "restore": False, "driver": env.driver,
        "reason": UNSUPPORTED + f'no VolumeSnapshotClass for storage driver "{env.driver}"'}
    env.add_snapshot_class(f"{env.ns}-snap")
    env.grant("notes", BOB, "read")
    assert env.api.as_(BOB).get(caps).json() == {
        "snapshots": True, "clones": True, "restore": False, "driver": env.driver,
        "snapshotClass": f"{env.ns}-snap",
        "reason": "restore requires cloning into a new context"}
    env.add_snapshot_class(f"{env.ns}-snap2")
    assert env.api.get(caps).json()["reason"] == (
        f'invalid context resource: multiple VolumeSnapshotClasses match storage driver '
        f'"{env.driver}"; specify snapshotClass')
    env.context("lost", storage_class=f"{env.ns}-gone", claim=False)
    assert env.api.get(env.path("lost", "/capabilities")).json() == {
        "snapshots": False, "clones": False, "restore": False,
        "reason": f'invalid context resource: storage class "{env.ns}-gone" not found'}
