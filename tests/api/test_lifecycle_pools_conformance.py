"""Lifecycle and sandbox pools held to the specification where two things happen at once or a
value sits on a limit: a clone committing while GC decides, a VolumeSnapshot name another object
holds, boundary values, and refusals that must hide what the caller may not see.

Over the real application and PostgreSQL with the in-memory cluster, so the interleavings are
exact: the test plays the snapshot controller (``set_snapshot_status``) and a concurrent client
(committing through the application at a chosen moment)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.adoption import adopt
from context_service.adapters.kubernetes.reconciler import Reconciler
from context_service.adapters.kubernetes.snapshot_reconciler import SnapshotReconciler
from context_service.adapters.postgres.views.contexts import ContextReadsSql
from context_service.domain.cluster import BuiltinRuntime, PoolSandbox, snapshot_object_name
from context_service.domain.context.events import CloneSource
from tests.api.conftest import Api
from tests.api.lifecycle_service import lifecycle_service
from tests.support.fake_cluster import FakeCluster

pytestmark = [pytest.mark.postgres]
NS = "team1"
ALICE, BOB = "user:alice", "agent:bob"
REV = "ab" * 32
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
EXISTS = {"error": "already_exists", "message": "context resource already exists"}


@dataclass
class World:
    api: Api  # calls as alice
    container: bootstrap.Container
    cluster: FakeCluster
    worker: SnapshotReconciler

    def path(self, context: str, suffix: str = "") -> str:
        return f"/v1/namespaces/{NS}/contexts/{context}{suffix}"

    def context(self, name: str = "notes", revision: str = REV) -> None:
        body = {"name": name, "namespace": NS, "type": "memory",
                "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce",
                            "storageClass": "fast"}}
        assert self.api.post("/v1/contexts", body).status_code == 201
        if revision:
            assert self.api.post(self.path(name, "/revisions"), {
                "id": revision, "createdAt": "2026-03-01T09:00:00Z",
                "operation": "sync"}).status_code == 201

    def snapshot(self, context: str, name: str, **body: Any) -> Any:
        return self.api.post(self.path(context, "/snapshots"), {"name": name, **body})

    def ready(self, context: str, *names: str) -> None:
        """The worker creates the VolumeSnapshots, the test's snapshotter marks them ready,
        the worker records it."""
        assert not self.worker.run_once().failures
        for name in names:
            self.cluster.set_snapshot_status(NS, snapshot_object_name(context, name))
        assert not self.worker.run_once().failures

    def status(self, context: str, name: str) -> dict[str, Any]:
        answer = self.api.get(self.path(context, f"/snapshots/{name}"))
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def grant(self, context: str, subject: str, *permissions: str) -> None:
        kind, name = subject.split(":", 1)
        answer = self.api.put(self.path(context, "/grants"), {
            "subject": {"kind": kind, "name": name}, "permissions": list(permissions)})
        assert answer.status_code == 200, answer.text


@pytest.fixture
def world(tmp_path: Path, database_url: str) -> Iterator[World]:
    with lifecycle_service(tmp_path, database_url) as (api, container, fake):
        yield World(api.as_(ALICE), container, fake, container.snapshot_worker())



def at_once(*calls: Callable[[], Any]) -> list[Any]:
    """Run ``calls`` on threads released together; their answers in order."""
    answers: list[Any] = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def run(i: int) -> None:
        start.wait()
        answers[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


# --- GC and clones at once ----------------------------------------------------------------------


def test_a_clone_committed_while_gc_decides_keeps_its_snapshot(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spec 6.6 (GC step 4) and 1.11: a snapshot referenced by a live clone is kept. A clone
    and a GC of its source run at once: the clone commits after GC read the clones and before GC
    commits. Exactly one may win: GC keeps the snapshot (the clone came first), or the clone
    answers 404 (GC came first). Never both: a live clone of a deleted VolumeSnapshot."""
    world.context()
    for name in ("s1", "s2"):
        assert world.snapshot("notes", name).status_code == 201
    world.ready("notes", "s1", "s2")
    assert world.api.put(world.path("notes", "/retention"), {"keepLast": 1}).status_code == 200
    clone: dict[str, Any] = {}
    read_clones = ContextReadsSql.clones_of

    def clone_meanwhile(reads: ContextReadsSql, namespace: str,
                        context: str) -> Sequence[CloneSource]:
        found = read_clones(reads, namespace, context)  # GC knows no clone yet
        if not clone:  # a client clones "s1" now, before GC commits
            worker = threading.Thread(target=lambda: clone.update(answer=world.api.post(
                world.path("notes", "/clones"), {"name": "copy", "snapshot": "s1"})))
            clone["thread"] = worker
            worker.start()
            worker.join(timeout=1)  # it commits, unless it has to wait for GC to finish
        return found

    monkeypatch.setattr(ContextReadsSql, "clones_of", clone_meanwhile)
    collected = world.api.post(world.path("notes", "/gc"))
    clone["thread"].join()
    assert collected.status_code == 200
    deleted = [s["name"] for s in collected.json().get("deleted", [])]
    cloned = clone["answer"]
    if cloned.status_code == 201:
        assert deleted == [], "GC deleted the snapshot a committed clone was made from"
        assert world.status("notes", "s1")["status"] == "ready"
    else:
        assert (cloned.status_code, cloned.json()) == (404, NOT_FOUND)
        assert deleted == ["s1"]
        assert world.api.get(world.path("copy")).status_code == 404


def test_exactly_one_of_two_equal_lifecycle_writes_wins(world: World) -> None:
    """Spec 1.11 (snapshot step 6, clone step 5), 1.1.7: two equal snapshot creates, or two
    clones to one target name, sent at once: one 201, the other 409 already_exists."""
    world.context()
    answers = at_once(lambda: world.snapshot("notes", "s1"), lambda: world.snapshot("notes", "s1"))
    assert sorted(a.status_code for a in answers) == [201, 409]
    assert [a.json() for a in answers if a.status_code == 409] == [EXISTS]
    assert world.snapshot("notes", "s2").status_code == 201
    world.ready("notes", "s1", "s2")

    def clone_to_copy(snapshot: str) -> Callable[[], Any]:
        return lambda: world.api.post(world.path("notes", "/clones"),
                                      {"name": "copy", "snapshot": snapshot})

    answers = at_once(clone_to_copy("s1"), clone_to_copy("s2"))
    assert sorted(a.status_code for a in answers) == [201, 409]
    assert [a.json() for a in answers if a.status_code == 409] == [EXISTS]


# --- the snapshot worker ------------------------------------------------------------------------


def test_a_volume_snapshot_name_taken_by_a_foreign_object_fails_the_snapshot(
        world: World) -> None:
    """Spec 6.6 (snapshot view: status observed from the snapshot's own VolumeSnapshot) and
    6.2 (bounded reach): an object without our labels takes the computed name after the
    snapshot was recorded. It is never reported, cloned from or touched as the snapshot's;
    the snapshot, which can never be made, reports failed, not creating for ever."""
    world.context()
    assert world.snapshot("notes", "s1").status_code == 201
    foreign = {"metadata": {"namespace": NS, "name": "context-notes-s1", "labels": {}},
               "spec": {"source": {"persistentVolumeClaimName": "someone-elses"}},
               "status": {"readyToUse": True}}
    world.cluster.put("volumesnapshots", foreign)
    first = world.worker.run_once()
    assert (first.created, first.failures) == (0, 0)
    got = world.status("notes", "s1")
    assert (got["status"], got.get("error")) == (
        "failed", 'VolumeSnapshot "context-notes-s1" belongs to another snapshot')
    assert world.worker.run_once().observed == 0  # recorded once
    clone = world.api.post(world.path("notes", "/clones"), {"name": "copy", "snapshot": "s1"})
    assert (clone.status_code, clone.json()["message"]) == (
        400, 'invalid context resource: snapshot "s1" is not ready')
    raw = world.cluster.manifest("volumesnapshots", NS, "context-notes-s1")
    assert raw is not None and raw["spec"] == foreign["spec"]
    assert raw["metadata"]["labels"] == {}


MANAGED = {"app.kubernetes.io/managed-by": "context-service"}


def test_a_clone_of_an_adopted_snapshot_restores_from_that_snapshots_object(
        world: World) -> None:
    """Spec 6.10 (adopted VolumeSnapshots keep their own names: the snapshot name comes from
    the ``context.rossoctl.io/snapshot`` label), 6.6 (``snapshotName`` is the object name) and
    6.3 (a clone's PVC has ``dataSource`` naming the snapshot's VolumeSnapshot): the clone's
    PVC restores from the adopted object, never from a computed name no object or another
    snapshot's object holds."""
    labels = {**MANAGED, "context.rossoctl.io/name": "notes", "context.rossoctl.io/type": "memory"}
    world.cluster.put("persistentvolumeclaims", {
        "metadata": {"namespace": NS, "name": "context-notes", "labels": labels},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                 "storageClassName": "fast"},
        "status": {"phase": "Bound"}})
    notes = {"context.rossoctl.io/source-claim": "context-notes",
             "context.rossoctl.io/storage-size": "1Gi",
             "context.rossoctl.io/access-mode": "ReadWriteOnce",
             "context.rossoctl.io/storage-class": "fast",
             "context.rossoctl.io/context-type": "memory"}
    world.cluster.put("volumesnapshots", {
        "metadata": {"namespace": NS, "name": "nightly-2026-03-01", "annotations": notes,
                     "labels": {**labels, "context.rossoctl.io/snapshot": "nightly"}},
        "spec": {"volumeSnapshotClassName": "fast-snap",
                 "source": {"persistentVolumeClaimName": "context-notes"}},
        "status": {"readyToUse": True}})
    assert adopt(world.cluster, world.container.store, "pools").contexts == [f"{NS}/notes"]
    owner = world.api.as_(None)  # an adopted context without a grants annotation
    adopted = owner.get(world.path("notes", "/snapshots/nightly")).json()
    assert (adopted["snapshotName"], adopted["status"]) == ("nightly-2026-03-01", "ready")
    clone = owner.post(world.path("notes", "/clones"), {"name": "copy", "snapshot": "nightly"})
    assert clone.status_code == 201, clone.text
    container = world.container
    Reconciler(world.cluster, container.store, container.contexts, container.pools,
               namespace="pools").sync()
    pvc = world.cluster.manifest("persistentvolumeclaims", NS, "context-copy")
    assert pvc is not None
    assert pvc["spec"]["dataSource"] == {"apiGroup": "snapshot.storage.k8s.io",
                                         "kind": "VolumeSnapshot", "name": "nightly-2026-03-01"}


# --- limits and names ---------------------------------------------------------------------------


def test_names_exactly_at_their_limits(world: World) -> None:
    """Spec 2.9, 2.8 and 6.6 (object name): a 50-character context and a 63-character snapshot
    name are accepted; the VolumeSnapshot name is the first 54 characters of
    ``context-<context>-<snapshot>`` without trailing ``-``, then ``-`` and 8 hex characters of
    its SHA-256; a 50-character clone target is accepted, 51 is not."""
    context = "c" * 45 + "-" + "d" * 4  # base[:54] ends in "-": stripped
    world.context(context)
    snapshot = "s" * 63
    made = world.snapshot(context, snapshot)
    assert made.status_code == 201, made.text
    base = f"context-{context}-{snapshot}"
    expected = base[:54].rstrip("-") + "-" + hashlib.sha256(base.encode()).hexdigest()[:8]
    assert made.json()["snapshotName"] == expected and len(expected) == 62
    assert world.snapshot(context, snapshot + "s").json()["message"] == (
        "snapshot must be a Kubernetes name")
    world.ready(context, snapshot)
    assert world.cluster.get_snapshot(NS, expected) is not None
    clones = world.path(context, "/clones")
    too_long = world.api.post(clones, {"name": "x" * 51, "snapshot": snapshot})
    assert too_long.json()["message"] == (
        "name must be a lowercase Kubernetes name no longer than 50 characters")
    assert world.api.post(clones, {"name": "x" * 50, "snapshot": snapshot}).status_code == 201


# --- hidden before invalid ----------------------------------------------------------------------


def test_a_caller_without_the_permission_learns_nothing_from_a_bad_body(world: World) -> None:
    """Spec 3.4 and 1.11 step 1 of each write route: access is checked before the body is read,
    so a caller without the permission gets 404 for a missing, malformed or invalid body, as for
    a good one, exactly as for an absent context."""
    world.context()
    world.grant("notes", BOB, "read")  # sees the context, may do none of these
    bob = world.api.as_(BOB)
    bodies = [b"", b"[", b'{"unknown":1}', b'{"name":"BAD","snapshot":"BAD"}',
              b'{"keepLast":-1,"maxAge":"7d"}']
    for method, suffix in (("POST", "/snapshots"), ("POST", "/clones"), ("POST", "/restore"),
                           ("PUT", "/retention")):
        for context in ("notes", "absent"):
            for raw in bodies:
                answer = bob.request(method, world.path(context, suffix), raw=raw)
                assert (suffix, context, raw, answer.status_code, answer.json()) == (
                    suffix, context, raw, 404, NOT_FOUND)


# --- pools at once ------------------------------------------------------------------------------

POOLS = "/v1/sandbox-pools"
WS = {"size": "1Gi", "accessMode": "ReadWriteOnce"}


def test_exactly_one_of_two_equal_pool_writes_wins(world: World) -> None:
    """Spec 1.12 (create step 4, release) and 1.1.7: two creates of one pool name sent at once,
    one 201 and one 409 already_exists; two releases at once, one 204 and one 404."""
    body = {"name": "p1", "replicas": 2, "workspace": WS}
    answers = at_once(lambda: world.api.post(POOLS, body), lambda: world.api.post(POOLS, body))
    assert sorted(a.status_code for a in answers) == [201, 409]
    assert [a.json() for a in answers if a.status_code == 409] == [
        {"error": "already_exists", "message": "sandbox pool already exists"}]
    answers = at_once(lambda: world.api.delete(f"{POOLS}/p1"),
                      lambda: world.api.delete(f"{POOLS}/p1"))
    assert sorted(a.status_code for a in answers) == [204, 404]
    assert [a.json() for a in answers if a.status_code == 404] == [
        {"error": "not_found", "message": "sandbox pool not found"}]
    assert world.api.get(POOLS).json() == {"items": []}


def test_an_adopted_existing_claim_pool_reports_the_claim_as_its_workspace(
        world: World) -> None:
    """Spec 6.10 (pools: "the workspace size, access mode and class come from the claim") and
    1.12 (``workspace.size`` and ``accessMode`` are "" only for a warm-pool pool; an existing-PVC
    pool reports the claim: canonical size, first access mode, storage class): right after the
    import, before any reconciler pass."""
    world.cluster.add_claim("pools", "team-data", size="2048Mi",
                            access_modes=("ReadWriteMany", "ReadOnlyMany"), storage_class="fast")
    world.cluster.ensure_sandbox(PoolSandbox(
        namespace="pools", pool="ext", index=0, replicas=2, claim="team-data",
        runtime=BuiltinRuntime(image="busybox:1.36"), read_only=True, existing_claim=True))
    assert adopt(world.cluster, world.container.store, "pools").pools == ["ext"]
    pool = world.api.get(f"{POOLS}/ext").json()
    assert (pool["replicas"], pool["workspace"]) == (2, {
        "size": "2Gi", "accessMode": "ReadWriteMany", "storageClass": "fast",
        "claimName": "team-data", "readOnly": True})
