"""The snapshot worker against the real API server and PostgreSQL (and the fake, for injected
failures): create-if-absent, observations recorded only on change, GC deletions, context
deletions leaving VolumeSnapshots alone, and the watch-driven background loop."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.snapshot_reconciler import SnapshotReconciler
from context_service.config import Settings
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import Cluster, ClusterError, ContextClaim
from context_service.domain.context import commands as cmd
from context_service.domain.context import events as ev
from context_service.domain.context import lifecycle as lc
from context_service.domain.context.commands import CreateContext, DeleteContext
from context_service.domain.events import Event, Subject
from tests.support.fake_cluster import FakeCluster

pytestmark = [pytest.mark.postgres]
ALICE = Subject("user", "alice")


class World:
    def __init__(self, container: bootstrap.Container, cluster: Cluster, ns: str) -> None:
        self.container = container
        self.cluster = cluster
        self.ns = ns
        self.worker: SnapshotReconciler = container.snapshot_worker()

    def context(self, name: str = "notes") -> None:
        self.container.contexts.execute(self.ns, name, CreateContext(
            actor=ALICE, name=name, namespace=self.ns, type="state", backend="pvc", size="1Gi",
            access_mode="ReadWriteOnce", storage_class="fast"))
        self.cluster.ensure_context_claim(ContextClaim(
            namespace=self.ns, context=name, type="state", size="1Gi",
            access_mode="ReadWriteOnce", storage_class="fast"))

    def snapshot(self, name: str, context: str = "notes") -> None:
        self.container.contexts.execute(self.ns, context, cmd.RecordSnapshot(
            actor=ALICE, name=name, storage_class="fast", snapshot_class="fast-snap"))

    def status(self, name: str, context: str = "notes") -> tuple[str, str]:
        _, state = self.container.contexts.load(self.ns, context)
        found = lc.find_snapshot(state, name)
        return found.status, found.error

    def events(self, kind: type[Event]) -> list[Any]:
        return [r.event for r in self.container.store.read(0, 10_000)
                if isinstance(r.event, kind)]

    def objects(self) -> list[str]:
        return sorted(s.name for s in self.cluster.list_snapshots(self.ns) if not s.deleting)

    def collect(self, keep_last: int = 1) -> None:
        self.container.contexts.execute(self.ns, "notes", cmd.SetRetention(
            actor=ALICE, keep_last=keep_last))
        self.container.contexts.execute(self.ns, "notes", cmd.CollectSnapshots(actor=ALICE))


def make_world(tmp_path: Path, url: str, cluster: Cluster, ns: str) -> bootstrap.Container:
    settings = Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                        namespace=ns)
    container = bootstrap.build(settings, url=url, pool_size=4)
    container.start_workers(("projections",))
    container.cluster = cluster
    return container


@pytest.fixture
def world(tmp_path: Path, database_url: str, kube_cluster: KubernetesCluster,
          kube_ns: str) -> Iterator[World]:
    container = make_world(tmp_path, database_url, kube_cluster, kube_ns)
    yield World(container, kube_cluster, kube_ns)
    container.close()


@pytest.fixture
def fake_world(tmp_path: Path, database_url: str) -> Iterator[tuple[World, FakeCluster]]:
    fake = FakeCluster()
    container = make_world(tmp_path, database_url, fake, "team1")
    yield World(container, fake, "team1"), fake
    container.close()


def wait_until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# --- against the real server ------------------------------------------------------------------


@pytest.mark.k8s
def test_volume_snapshots_are_created_once_and_observed_on_change(
        world: World, kube_sim: DevSimulator) -> None:
    world.context()
    world.snapshot("s1")
    world.snapshot("s2")
    kube_sim.settle(2)  # the PVC binds
    report = world.worker.run_once()
    assert (report.created, report.observed, report.failures) == (2, 0, 0)
    assert world.worker.run_once().created == 0
    assert world.objects() == ["context-notes-s1", "context-notes-s2"]

    kube_sim.fail_snapshot(world.ns, "context-notes-s2", "quota exceeded")
    kube_sim.settle(2)
    assert world.worker.run_once().observed == 2
    assert world.status("s1") == ("ready", "")
    assert world.status("s2") == ("failed", "quota exceeded")
    before = len(world.events(ev.SnapshotObserved))
    for _ in range(2):
        assert world.worker.run_once().observed == 0
    assert len(world.events(ev.SnapshotObserved)) == before


@pytest.mark.k8s
def test_a_vanished_ready_snapshot_is_reported_failed_never_retaken(
        world: World, kube_sim: DevSimulator, kube_cluster: KubernetesCluster) -> None:
    world.context()
    world.snapshot("s1")
    kube_sim.settle(2)
    world.worker.run_once()
    kube_sim.settle(2)
    world.worker.run_once()
    assert world.status("s1") == ("ready", "")
    kube_cluster.delete_snapshot(world.ns, "context-notes-s1")
    report = world.worker.run_once()
    assert (report.created, report.observed) == (0, 1)
    assert world.status("s1") == ("failed", 'VolumeSnapshot "context-notes-s1" not found')
    assert world.objects() == []


@pytest.mark.k8s
def test_collected_snapshots_lose_their_volume_snapshots(
        world: World, kube_sim: DevSimulator) -> None:
    world.context()
    for name in ("s1", "s2", "s3"):
        world.snapshot(name)
    world.worker.run_once()
    world.collect(keep_last=1)
    report = world.worker.run_once()
    assert (report.deleted, report.failures) == (2, 0)
    assert world.objects() == ["context-notes-s3"]
    assert sorted(e.object_name for e in world.events(ev.SnapshotObjectDeleted)) == [
        "context-notes-s1", "context-notes-s2"]
    assert world.worker.run_once().deleted == 0
    assert len(world.events(ev.SnapshotObjectDeleted)) == 2


@pytest.mark.k8s
def test_a_deleted_context_leaves_its_volume_snapshots_alone(
        world: World, kube_sim: DevSimulator) -> None:
    world.context()
    world.snapshot("s1")
    world.worker.run_once()
    world.snapshot("late")  # recorded, never created
    world.container.contexts.execute(world.ns, "notes", DeleteContext(actor=ALICE, force=True))
    report = world.worker.run_once()
    assert (report.created, report.deleted, report.observed) == (0, 0, 0)
    assert world.objects() == ["context-notes-s1"]


@pytest.mark.k8s
def test_the_background_worker_follows_the_log_and_the_watch(
        world: World, kube_sim: DevSimulator) -> None:
    world.worker.interval = 30.0  # only the log and the watch can wake it in time
    world.worker.start()
    try:
        world.context()
        kube_sim.settle(2)
        world.snapshot("s1")
        wait_until(lambda: world.objects() == ["context-notes-s1"])
        kube_sim.settle(2)
        wait_until(lambda: world.status("s1") == ("ready", ""))
    finally:
        world.worker.stop()
    assert world.worker.passes >= 2


@pytest.mark.k8s
def test_start_workers_runs_the_snapshot_worker_only_with_a_cluster(
        tmp_path: Path, database_url: str, kube_cluster: KubernetesCluster, kube_ns: str) -> None:
    settings = Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                        namespace=kube_ns)
    container = bootstrap.build(settings, url=database_url, pool_size=4)
    try:
        container.start_workers(("projections", "snapshots"))
        assert not any(isinstance(getattr(w, "worker", None), SnapshotReconciler)
                       for w in container.started)
        container.cluster = kube_cluster
        container.start_workers(("snapshots",))
        [worker] = [w.worker for w in container.started
                    if isinstance(getattr(w, "worker", None), SnapshotReconciler)]
        assert any(name == "cs_snapshot_passes" for name, *_ in container.gauges())
    finally:
        container.close()
    assert worker._thread is None


# --- failures, on the fake --------------------------------------------------------------------


def test_a_failing_namespace_is_retried_without_stopping_the_pass(
        fake_world: tuple[World, FakeCluster]) -> None:
    world, fake = fake_world
    world.context()
    world.snapshot("s1")
    fake.fail("list_snapshots", ClusterError(503, "Unavailable", "down"))
    report = world.worker.run_once()
    assert (report.created, report.failures) == (0, 1)
    assert world.worker.run_once().created == 1
    fake.fail("ensure_snapshot", ClusterError(500, "InternalError", "boom"))
    fake.objects.clear()
    assert world.worker.run_once().failures == 1
    assert world.worker.run_once().created == 1


def test_an_object_already_being_deleted_is_not_deleted_again(
        fake_world: tuple[World, FakeCluster]) -> None:
    world, fake = fake_world
    world.context()
    world.snapshot("s1")
    world.snapshot("s2")
    world.worker.run_once()
    fake.hold_deletes = True
    fake.delete_snapshot("team1", "context-notes-s1")
    world.collect(keep_last=1)
    fake.calls.clear()
    assert world.worker.run_once().deleted == 0
    assert ("delete_snapshot", "team1", "context-notes-s1") not in fake.calls
    assert [e.name for e in world.events(ev.SnapshotObjectDeleted)] == ["s1"]


def test_a_stale_view_skips_the_pass(fake_world: tuple[World, FakeCluster]) -> None:
    world, _ = fake_world
    world.worker.caught_up = lambda timeout: False
    assert world.worker.run_once().skipped


def test_the_view_rebuilt_from_zero_equals_the_live_view(
        fake_world: tuple[World, FakeCluster]) -> None:
    world, fake = fake_world
    world.context()
    world.context("other")
    for name in ("s1", "s2", "s3"):
        world.snapshot(name)
    world.snapshot("x", context="other")
    world.worker.run_once()
    fake.set_snapshot_status("team1", "context-notes-s3", ready=False, error="broken")
    world.collect(keep_last=1)
    fake.hold_deletes = True
    world.worker.run_once()  # records s3 failed and the deletions of s1 and s2
    world.snapshot("s4")
    world.container.contexts.execute(world.ns, "other", DeleteContext(actor=ALICE))
    runner = world.container.runner("snapshot_objects")
    assert runner.wait_for(world.container.store.head(), timeout=10)
    live = world.worker.reads.all()
    assert [(r.desired.context, r.desired.snapshot, r.status, r.collected) for r in live] == [
        ("notes", "s3", "failed", False), ("notes", "s4", "creating", False)]
    runner.stop()
    runner.rebuild()
    assert world.worker.reads.all() == live
