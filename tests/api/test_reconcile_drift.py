"""The reconciler against the real API server converges on edited objects: fields the service
sets are put back, fields it does not set are kept, an immutable field that no longer matches is
reported (not retried), one PVC name is never claimed by two owners, and a watch that failed
tells the reconciler to resync once it has listed again."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import SANDBOX
from context_service.adapters.kubernetes.reconciler import Reconciler
from context_service.adapters.kubernetes.rest import PVCS, Rest, WatchStream
from context_service.adapters.kubernetes.watch import ClusterWatch
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import (
    NAME_LABEL,
    POOL_LABEL,
    BuiltinRuntime,
    Change,
    ClusterError,
)
from context_service.domain.context.commands import CreateContext, DeleteContext
from context_service.domain.events import Subject
from context_service.domain.pool.commands import RequestPool
from tests.support.pool_fixtures import IMAGE, Seed, eventually, manual_reconciler

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
OWNER = Subject("user", "owner")
RUNTIME = BuiltinRuntime(image=IMAGE)


@pytest.fixture
def rec(kube_container: bootstrap.Container) -> Reconciler:
    return manual_reconciler(kube_container)


def shared_pool(ns: str, name: str) -> RequestPool:
    return RequestPool(name=name, replicas=1, namespace=ns, size="1Gi",
                       access_mode="ReadWriteMany", runtime=RUNTIME)


def create_context(container: bootstrap.Container, ns: str, name: str) -> None:
    container.contexts.execute(ns, name, CreateContext(
        actor=OWNER, name=name, namespace=ns, type="memory", backend="pvc", size="1Gi",
        access_mode="ReadWriteOnce"))


def edit(rest: Rest, path: str, patch: dict[str, Any]) -> None:
    """An operator's edit (a merge patch under another field manager)."""
    rest.patch(path, patch, "operator")


def clean(rec: Reconciler) -> None:
    for result in rec.sync():
        assert result.errors == []


# --- drift ------------------------------------------------------------------------------------


def test_an_edited_sandbox_is_restored_and_foreign_fields_are_kept(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed,
        kube_rest: Rest) -> None:
    kube_container.pools.execute(shared_pool(kube_ns, "docs"))
    clean(rec)
    path = SANDBOX.path(kube_ns, "sandbox-docs-0")
    before = seed.read(path)
    assert before is not None
    container = before["spec"]["podTemplate"]["spec"]["containers"][0]
    edit(kube_rest, path, {
        "metadata": {"labels": {"team": "blue"},
                     "annotations": {"context.rossoctl.io/replicas": "7", "note": "mine"}},
        "spec": {"podTemplate": {"spec": {
            "containers": [{**container, "image": "evil:1"}],
            "nodeSelector": {"disk": "ssd"}}}}})

    [result] = rec.sync()
    assert result.errors == [] and result.changed == 1
    after = seed.read(path)
    assert after is not None
    assert after["spec"]["podTemplate"]["spec"]["containers"][0]["image"] == IMAGE
    assert after["metadata"]["annotations"]["context.rossoctl.io/replicas"] == "1"
    # what the service does not set stays as the operator left it
    assert after["metadata"]["labels"]["team"] == "blue"
    assert after["metadata"]["annotations"]["note"] == "mine"
    assert after["spec"]["podTemplate"]["spec"]["nodeSelector"] == {"disk": "ssd"}

    [again] = rec.sync()
    assert (again.planned, again.changed, again.errors) == (0, 0, [])


def test_edited_workspace_claim_labels_are_restored(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed,
        kube_rest: Rest) -> None:
    kube_container.pools.execute(shared_pool(kube_ns, "docs"))
    clean(rec)
    path = PVCS.path(kube_ns, "docs-workspace")
    edit(kube_rest, path, {"metadata": {"labels": {
        "context.rossoctl.io/replicas": "5", "team": "blue"}}})
    clean(rec)
    labels = (seed.read(path) or {})["metadata"]["labels"]
    assert labels["context.rossoctl.io/replicas"] == "1"
    assert labels["team"] == "blue"

    # the pool label itself removed: found by name, relabelled, never created twice
    edit(kube_rest, path, {"metadata": {"labels": {POOL_LABEL: None}}})
    clean(rec)
    labels = (seed.read(path) or {})["metadata"]["labels"]
    assert labels[POOL_LABEL] == "docs"


def test_a_claim_of_another_size_is_reported_not_retried(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed) -> None:
    seed.claim("context-notes", size="2Gi", modes=("ReadWriteOnce",), labels={
        "app.kubernetes.io/managed-by": "context-service", NAME_LABEL: "notes",
        "context.rossoctl.io/type": "memory"})
    create_context(kube_container, kube_ns, "notes")
    for _ in range(2):  # reported on every pass, never an error that backs off and retries
        [result] = rec.sync()
        assert result.errors == []
        assert any("context-notes" in c and "2Gi" in c for c in result.conflicts)
    raw = seed.read(PVCS.path(kube_ns, "context-notes"))
    assert raw is not None and raw["spec"]["resources"]["requests"]["storage"] == "2Gi"


# --- one owner per name -----------------------------------------------------------------------


def test_a_pool_created_first_keeps_its_claim_from_a_context(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed,
        kube_sim: DevSimulator) -> None:
    # both want PVC context-x-workspace; the context was recorded before the pool's claim
    # existed (so no create-time check could refuse it), its PVC is made after the pool's
    kube_container.pools.execute(shared_pool(kube_ns, "context-x"))
    clean(rec)
    create_context(kube_container, kube_ns, "x-workspace")
    [result] = rec.sync()
    assert result.errors == []
    assert any("pool context-x" in c and "x-workspace" in c for c in result.conflicts)
    path = PVCS.path(kube_ns, "context-x-workspace")
    labels = (seed.read(path) or {})["metadata"]["labels"]
    assert labels[POOL_LABEL] == "context-x"
    assert NAME_LABEL not in labels  # never relabelled for the context

    kube_sim.settle()
    clean(rec)
    _, state = kube_container.contexts.load(kube_ns, "x-workspace")
    assert state.status == "provisioning"  # the pool's bound claim is not the context's

    kube_container.contexts.execute(kube_ns, "x-workspace", DeleteContext(actor=OWNER))
    clean(rec)
    assert seed.read(path) is not None  # deleting the context leaves the pool's claim alone


def test_owners_recorded_at_the_same_moment_never_share_a_claim(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed) -> None:
    create_context(kube_container, kube_ns, "x-workspace")
    kube_container.pools.execute(shared_pool(kube_ns, "context-x"))
    rec.sync()  # both creates race: the first one made keeps the name, the other is refused
    [result] = rec.sync()
    assert result.errors == []
    labels = (seed.read(PVCS.path(kube_ns, "context-x-workspace")) or {})["metadata"]["labels"]
    assert (POOL_LABEL in labels) != (NAME_LABEL in labels)
    pool_lost = NAME_LABEL in labels
    loser = "pool context-x" if pool_lost else f"context {kube_ns}/x-workspace"
    assert any(f"{loser} cannot use it" in c for c in result.conflicts)
    if pool_lost:
        assert seed.read(SANDBOX.path(kube_ns, "sandbox-context-x-0")) is None


def test_a_context_created_first_keeps_its_claim_from_a_pool(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed) -> None:
    create_context(kube_container, kube_ns, "x-workspace")
    clean(rec)
    kube_container.pools.execute(shared_pool(kube_ns, "context-x"))
    results = rec.sync() + rec.sync()
    labels = (seed.read(PVCS.path(kube_ns, "context-x-workspace")) or {})["metadata"]["labels"]
    assert labels[NAME_LABEL] == "x-workspace" and POOL_LABEL not in labels
    # no Sandbox mounts the context's claim
    assert seed.read(SANDBOX.path(kube_ns, "sandbox-context-x-0")) is None
    assert any("context-x" in c for r in results for c in r.conflicts)
    assert results[-1].errors == []


# --- watches ----------------------------------------------------------------------------------


class DroppingRest(Rest):
    """The JSON layer whose first watch fails as a dropped connection does."""

    def __init__(self, rest: Rest) -> None:
        super().__init__(rest.api, rest.timeout)
        self.watches = 0
        self.lists = 0

    def get(self, path: str, query: dict[str, str] | None = None) -> Any:
        self.lists += 1
        return super().get(path, query)

    def watch(self, path: str, resource_version: str, selector: str = "") -> WatchStream:
        self.watches += 1
        if self.watches == 1:
            raise ClusterError(503, "Unavailable", "connection reset")
        return super().watch(path, resource_version, selector)


def test_a_failed_watch_asks_for_a_resync_after_relisting(kube_rest: Rest, kube_ns: str,
                                                          seed: Seed) -> None:
    rest = DroppingRest(kube_rest)
    changes: list[Change] = []
    seen = threading.Event()

    def on_change(change: Change) -> None:
        changes.append(change)
        seen.set()

    watch = ClusterWatch(rest, [PVCS], kube_ns, on_change, retry_seconds=0.01).start()
    try:
        seen.wait(10)
        assert changes[:1] == [Change(kind="persistentvolumeclaims", namespace=kube_ns, name="")]
        assert rest.lists == 2  # the notice follows the relist, so nothing is missed after it
        eventually(lambda: rest.watches >= 2)
        seed.claim("late")
        eventually(lambda: any(c.name == "late" for c in changes))
    finally:
        watch.stop()
