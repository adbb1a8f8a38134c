"""The reconciler against the real API server and PostgreSQL, driven pass by pass with ``sync()``:
every strategy converges to the spec's objects and status, release follows each strategy, drift
and crash leftovers are repaired without duplicates, and a converged resync writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import SANDBOX, KubernetesCluster
from context_service.adapters.kubernetes.reconciler import Reconciler
from context_service.adapters.kubernetes.rest import PVCS, Rest
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import BuiltinRuntime, PoolSandbox, WorkspaceClaim
from context_service.domain.pool.commands import ReleasePool, RequestPool
from context_service.domain.pool.events import Resource, Workspace
from tests.support.pool_fixtures import IMAGE, Seed, manual_reconciler

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
RUNTIME = BuiltinRuntime(image=IMAGE)


class CountingRest(Rest):
    """The JSON layer, counting requests by method."""

    def __init__(self, rest: Rest) -> None:
        super().__init__(rest.api, rest.timeout)
        self.calls: list[tuple[str, str]] = []

    def request(self, method: str, path: str, **kw: Any) -> Any:
        self.calls.append((method, path))
        return super().request(method, path, **kw)


def request(ns: str, name: str, replicas: int = 2, **fields: Any) -> RequestPool:
    if "warm_pool_ref" not in fields and "claim_name" not in fields:
        fields.setdefault("size", "1Gi")
        fields.setdefault("access_mode", "ReadWriteOnce")
    runtime = None if "warm_pool_ref" in fields else RUNTIME
    return RequestPool(name=name, replicas=replicas, namespace=ns, runtime=runtime, **fields)


@pytest.fixture
def rec(kube_container: bootstrap.Container) -> Reconciler:
    return manual_reconciler(kube_container)


def names(cluster: KubernetesCluster, ns: str, pool: str) -> dict[str, list[str]]:
    objects = cluster.list_pool_objects(ns, pool)
    return {"sandboxes": [s.name for s in objects.sandboxes],
            "claims": [c.name for c in objects.sandbox_claims],
            "pvcs": [c.name for c in objects.claims], "pods": [p.name for p in objects.pods]}


def converge(rec: Reconciler, sim: DevSimulator, rounds: int = 3) -> None:
    for _ in range(rounds):
        assert all(not r.errors for r in rec.sync())
        sim.settle()
    rec.sync()


def test_dedicated_pool_converges_and_reports_status(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str,
        kube_cluster: KubernetesCluster, kube_sim: DevSimulator) -> None:
    kube_container.pools.execute(request(kube_ns, "docs"))
    rec.sync()
    assert names(kube_cluster, kube_ns, "docs") == {
        "sandboxes": ["sandbox-docs-0", "sandbox-docs-1"], "claims": [],
        "pvcs": ["docs-workspace-0", "docs-workspace-1"], "pods": []}
    sandbox = kube_cluster.get_sandbox(kube_ns, "sandbox-docs-1")
    assert sandbox is not None and sandbox.annotations["context.rossoctl.io/replicas"] == "2"

    converge(rec, kube_sim)
    _, state = kube_container.pools.load("docs")
    assert (state.status, state.ready_replicas) == ("ready", 2)
    assert state.resources == (
        Resource("sandbox", "sandbox-docs-0", "Ready"),
        Resource("sandbox", "sandbox-docs-1", "Ready"),
        Resource("pod", "sandbox-docs-0", "Running"), Resource("pod", "sandbox-docs-1", "Running"),
        Resource("pvc", "docs-workspace-0", "Bound"), Resource("pvc", "docs-workspace-1", "Bound"))


def test_shared_and_existing_claim_pools_mount_one_claim(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed,
        kube_cluster: KubernetesCluster, kube_sim: DevSimulator) -> None:
    seed.claim("team-data", size="2048Mi")
    claim = Workspace(size="2Gi", access_mode="ReadWriteMany", claim_name="team-data",
                      read_only=True)
    kube_container.pools.execute(request(kube_ns, "shared", access_mode="ReadWriteMany"))
    kube_container.pools.execute(request(kube_ns, "ext", claim_name="team-data", read_only=True,
                                         claim=claim))
    rec.sync()
    assert names(kube_cluster, kube_ns, "shared")["pvcs"] == ["shared-workspace"]
    assert names(kube_cluster, kube_ns, "ext")["pvcs"] == []
    raw = seed.read(SANDBOX.path(kube_ns, "sandbox-ext-1"))
    assert raw is not None
    assert raw["metadata"]["annotations"]["context.rossoctl.io/workspace-claim"] == "team-data"
    assert raw["spec"]["podTemplate"]["spec"]["volumes"] == [{
        "name": "workspace", "persistentVolumeClaim": {"claimName": "team-data", "readOnly": True}}]

    converge(rec, kube_sim)
    _, ext = kube_container.pools.load("ext")
    assert (ext.status, ext.ready_replicas) == ("ready", 2)
    assert Resource("pvc", "team-data", "Bound") in ext.resources
    assert ext.observed_workspace == Workspace(size="2Gi", access_mode="ReadWriteMany",
                                               claim_name="team-data", read_only=True)
    _, shared = kube_container.pools.load("shared")
    assert shared.status == "ready"


def test_warm_pool_claims_become_ready(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed,
        kube_cluster: KubernetesCluster, kube_sim: DevSimulator) -> None:
    seed.template("dev")
    seed.warm_pool("warm", "dev")
    kube_container.pools.execute(request(kube_ns, "agents", replicas=3, warm_pool_ref="warm"))
    rec.sync()
    assert names(kube_cluster, kube_ns, "agents")["claims"] == [
        "claim-agents-0", "claim-agents-1", "claim-agents-2"]
    converge(rec, kube_sim)
    _, state = kube_container.pools.load("agents")
    assert (state.status, state.ready_replicas) == ("ready", 3)
    assert [r.kind for r in state.resources] == ["sandboxclaim"] * 3 + ["pod"] * 3


def test_release_follows_each_strategy(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed,
        kube_cluster: KubernetesCluster, kube_sim: DevSimulator) -> None:
    seed.template("dev")
    seed.warm_pool("warm", "dev")
    seed.claim("team-data")
    claim = Workspace(size="2Gi", access_mode="ReadWriteMany", claim_name="team-data",
                      read_only=False)
    pools = kube_container.pools
    pools.execute(request(kube_ns, "ded"))
    pools.execute(request(kube_ns, "sha", access_mode="ReadWriteMany"))
    pools.execute(request(kube_ns, "ext", claim_name="team-data", read_only=False, claim=claim))
    pools.execute(request(kube_ns, "wrm", warm_pool_ref="warm"))
    converge(rec, kube_sim)
    for name in ("ded", "sha", "ext", "wrm"):
        pools.execute(ReleasePool(name=name))
    rec.sync()
    claims = kube_cluster.list_pool_objects(kube_ns, "wrm").sandbox_claims
    assert [c.deleting for c in claims] == [True, True]  # foreground: held until dependents go
    kube_sim.settle()
    rec.sync()
    empty: dict[str, list[str]] = {"sandboxes": [], "claims": [], "pvcs": [], "pods": []}
    for name in ("ded", "sha", "ext", "wrm"):
        assert names(kube_cluster, kube_ns, name) == empty, name
    assert kube_cluster.get_claim(kube_ns, "team-data") is not None
    assert kube_cluster.get_warm_pool(kube_ns, "warm") is not None
    assert kube_cluster.get_sandbox_template(kube_ns, "dev") is not None


def test_drift_is_repaired_and_unknown_objects_are_left_alone(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str,
        kube_cluster: KubernetesCluster, kube_sim: DevSimulator) -> None:
    kube_container.pools.execute(request(kube_ns, "docs"))
    stranger = PoolSandbox(namespace=kube_ns, pool="stranger", index=0, replicas=1,
                           claim="x", runtime=RUNTIME)
    kube_cluster.ensure_sandbox(stranger)
    converge(rec, kube_sim)
    kube_cluster.delete_sandbox(kube_ns, "sandbox-docs-1")
    kube_cluster.delete_claim(kube_ns, "docs-workspace-0")
    kube_sim.settle()
    rec.sync()
    assert names(kube_cluster, kube_ns, "docs")["pvcs"] == ["docs-workspace-0", "docs-workspace-1"]
    assert "sandbox-docs-1" in names(kube_cluster, kube_ns, "docs")["sandboxes"]
    assert kube_cluster.get_sandbox(kube_ns, "sandbox-stranger-0") is not None
    converge(rec, kube_sim)
    _, state = kube_container.pools.load("docs")
    assert state.status == "ready"


def test_crash_leftovers_are_adopted_not_duplicated(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str,
        kube_cluster: KubernetesCluster) -> None:
    kube_container.pools.execute(request(kube_ns, "docs", replicas=3))
    # a previous instance died after creating some of the objects
    kube_cluster.ensure_workspace_claim(WorkspaceClaim(
        namespace=kube_ns, pool="docs", index=0, replicas=3, size="1Gi",
        access_mode="ReadWriteOnce"))
    kube_cluster.ensure_sandbox(PoolSandbox(namespace=kube_ns, pool="docs", index=0, replicas=3,
                                            claim="docs-workspace-0", runtime=RUNTIME))
    [result] = rec.sync()
    assert (result.planned, result.changed) == (4, 4)
    assert names(kube_cluster, kube_ns, "docs")["sandboxes"] == [
        "sandbox-docs-0", "sandbox-docs-1", "sandbox-docs-2"]
    [again] = rec.sync()
    assert (again.planned, again.changed) == (0, 0)


def test_converged_resync_makes_no_writes(
        kube_container: bootstrap.Container, kube_ns: str, seed: Seed, kube_rest: Rest,
        kube_sim: DevSimulator) -> None:
    seed.claim("team-data")
    claim = Workspace(size="2Gi", access_mode="ReadWriteMany", claim_name="team-data",
                      read_only=True)
    kube_container.pools.execute(request(kube_ns, "a"))
    kube_container.pools.execute(request(kube_ns, "b", access_mode="ReadWriteMany"))
    kube_container.pools.execute(request(kube_ns, "c", claim_name="team-data", read_only=True,
                                         claim=claim))
    counting = CountingRest(kube_rest)
    rec = manual_reconciler(kube_container)
    rec.cluster = rec.passes.cluster = KubernetesCluster(counting)
    converge(rec, kube_sim)
    counting.calls.clear()
    head = kube_container.store.head()
    [result] = rec.sync()
    assert (result.planned, result.recorded, result.errors) == (0, 0, [])
    assert {m for m, _ in counting.calls} == {"GET"}
    assert len(counting.calls) == 5  # 4 lists of pool objects + the existing claim
    assert kube_container.store.head() == head


def test_context_claim_follows_the_context(
        kube_container: bootstrap.Container, rec: Reconciler, kube_ns: str, seed: Seed,
        kube_sim: DevSimulator) -> None:
    from context_service.domain.context.commands import CreateContext, DeleteContext, GrantAccess
    from context_service.domain.events import Subject

    alice = Subject("user", "alice")
    apps = kube_container.contexts
    apps.execute(kube_ns, "notes", CreateContext(
        actor=alice, name="notes", namespace=kube_ns, type="memory", backend="pvc", size="1Gi",
        access_mode="ReadWriteOnce"))
    rec.sync()
    raw = seed.read(PVCS.path(kube_ns, "context-notes"))
    assert raw is not None
    assert raw["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "context-service",
                                         "context.rossoctl.io/name": "notes",
                                         "context.rossoctl.io/type": "memory"}
    apps.execute(kube_ns, "notes", GrantAccess(actor=alice, subject=Subject("agent", "bot"),
                                               permissions=("read",)))
    rec.sync()
    raw = seed.read(PVCS.path(kube_ns, "context-notes"))
    assert raw is not None
    grants = raw["metadata"]["annotations"]["context.rossoctl.io/access-grants"]
    assert '"subject":{"kind":"agent","name":"bot"},"permissions":["read"]' in grants
    kube_sim.settle()
    seed.pod("reader", "context-notes", read_only=True)
    kube_sim.settle()
    rec.sync()
    _, state = apps.load(kube_ns, "notes")
    assert state.status == "ready"
    assert [(c.kind, c.name, c.access_mode, c.active) for c in state.observed] == [
        ("pod", "reader", "readOnly", True)]
    seed.delete_pod("reader")
    rec.sync()
    _, state = apps.load(kube_ns, "notes")
    assert state.observed == ()
    apps.execute(kube_ns, "notes", DeleteContext(actor=alice))
    rec.sync()
    assert seed.read(PVCS.path(kube_ns, "context-notes")) is None

