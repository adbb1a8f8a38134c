"""Drift repair through the cluster port, over the in-memory cluster: an operator's edit of a
field the service sets is seen by one pass's listing and put back by a restore of the port; the
next pass plans nothing. An adopted pool's Sandboxes are left as found, and a PVC of another
size is reported on every pass without a single write to it."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from context_service.adapters.kubernetes.reconciler_pass import NamespacePass
from context_service.domain.cluster import REPLICAS_KEY, BuiltinRuntime, ClusterError
from context_service.domain.pool.events import Workspace
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile.desired import pool_objects
from context_service.domain.reconcile.plan import Scope
from tests.support.fake_cluster import FakeCluster

NS = "svc"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
IMAGE = "busybox:1.36"
SANDBOX = ("sandboxes", NS, "sandbox-docs-0")
WORKSPACE = ("persistentvolumeclaims", NS, "docs-workspace")


class _Log:
    """Stands in for the applications: every observation command is accepted."""

    def execute(self, *_: Any) -> Any:
        return SimpleNamespace(position=1)


def pool(strategy: str = "shared", **kw: Any) -> PoolState:
    warm = strategy == "warm-pool"
    fields: dict[str, Any] = dict(
        live=True, name="docs", namespace=NS, replicas=1, strategy=strategy,
        workspace=Workspace() if warm else Workspace(size="1Gi", access_mode="ReadWriteMany"),
        warm_pool_ref="warm" if warm else "", runtime=None if warm else BuiltinRuntime(image=IMAGE))
    fields.update(kw)
    return PoolState(**fields)


def converged(fake: FakeCluster, scope: Scope) -> NamespacePass:
    passes = NamespacePass(fake, _Log(), _Log(), None, lambda: T0)  # type: ignore[arg-type]
    created = passes.run(scope)
    assert created.errors == [] and created.changed > 0
    quiet = passes.run(scope)
    assert (quiet.planned, quiet.changed) == (0, 0)
    return passes


def container(fake: FakeCluster) -> dict[str, Any]:
    found = fake.manifest(*SANDBOX)
    assert found is not None
    first: dict[str, Any] = found["spec"]["podTemplate"]["spec"]["containers"][0]
    return first


def edit_sandbox(fake: FakeCluster) -> None:
    """What an operator's ``kubectl patch --type merge`` of the Sandbox does."""
    fake.edit(*SANDBOX, {
        "metadata": {"labels": {"team": "blue"},
                     "annotations": {REPLICAS_KEY: "7", "note": "mine"}},
        "spec": {"podTemplate": {"spec": {
            "containers": [{**container(fake), "image": "evil:1"}],
            "nodeSelector": {"disk": "ssd"}}}}})


def writes(fake: FakeCluster, since: int) -> list[tuple[str, ...]]:
    return [c for c in fake.calls[since:] if not c[0].startswith(("get_", "list_"))]


def test_an_edited_sandbox_is_restored_by_one_pass_and_the_next_plans_nothing() -> None:
    fake = FakeCluster()
    scope = Scope(namespace=NS, pools=(pool(),))
    passes = converged(fake, scope)
    edit_sandbox(fake)
    since = len(fake.calls)

    result = passes.run(scope)
    assert (result.planned, result.changed, result.errors) == (1, 1, [])
    assert writes(fake, since) == [("restore_sandbox", NS, "sandbox-docs-0")]
    assert fake.restored == [SANDBOX]
    after = fake.manifest(*SANDBOX)
    assert after is not None
    assert container(fake)["image"] == IMAGE
    assert after["metadata"]["annotations"][REPLICAS_KEY] == "1"
    # what the service does not set stays as the operator left it
    assert after["metadata"]["labels"]["team"] == "blue"
    assert after["metadata"]["annotations"]["note"] == "mine"
    assert after["spec"]["podTemplate"]["spec"]["nodeSelector"] == {"disk": "ssd"}

    again = passes.run(scope)
    assert (again.planned, again.changed, again.errors) == (0, 0, [])
    assert fake.restored == [SANDBOX]


def test_edited_workspace_claim_labels_and_sandbox_claims_are_restored() -> None:
    fake = FakeCluster()
    scope = Scope(namespace=NS, pools=(pool(),))
    passes = converged(fake, scope)
    fake.edit(*WORKSPACE, {"metadata": {"labels": {REPLICAS_KEY: "5", "team": "blue"}}})
    assert passes.run(scope).changed == 1
    labels = (fake.manifest(*WORKSPACE) or {})["metadata"]["labels"]
    assert (labels[REPLICAS_KEY], labels["team"]) == ("1", "blue")

    warm = Scope(namespace=NS, pools=(pool("warm-pool", name="agents"),))
    passes = converged(fake, warm)
    claim = ("sandboxclaims", NS, "claim-agents-0")
    fake.edit(*claim, {"spec": {"warmPoolRef": {"name": "other"}}})
    assert passes.run(warm).changed == 1
    assert (fake.manifest(*claim) or {})["spec"]["warmPoolRef"] == {"name": "warm"}
    assert fake.restored == [WORKSPACE, claim]
    assert passes.run(warm).planned == 0


def test_an_adopted_pools_edited_sandbox_is_not_restored() -> None:
    fake = FakeCluster()
    scope = Scope(namespace=NS, pools=(pool(adopted=True),))
    passes = converged(fake, scope)
    edit_sandbox(fake)

    result = passes.run(scope)
    assert (result.planned, result.changed, result.errors) == (0, 0, [])
    assert container(fake)["image"] == "evil:1"
    # its PVC's labels are still the service's to keep (spec 6.10 spares compute only)
    fake.edit(*WORKSPACE, {"metadata": {"labels": {REPLICAS_KEY: "5"}}})
    assert passes.run(scope).changed == 1
    assert fake.restored == [WORKSPACE]


def test_a_claim_of_another_size_is_reported_as_a_conflict_and_never_retried() -> None:
    fake = FakeCluster()
    scope = Scope(namespace=NS, pools=(pool(),))
    passes = converged(fake, scope)
    fake.edit(*WORKSPACE, {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    since = len(fake.calls)

    for _ in range(2):  # reported by every pass, never an error that backs off and retries
        result = passes.run(scope)
        assert (result.planned, result.errors) == (0, [])
        [conflict] = result.conflicts
        assert "pvc svc/docs-workspace" in conflict and "size 2Gi, not 1Gi" in conflict
    assert writes(fake, since) == []
    assert passes.reported == 1  # warned once
    spec = (fake.manifest(*WORKSPACE) or {})["spec"]
    assert spec["resources"]["requests"]["storage"] == "2Gi"


def test_a_refused_restore_is_a_conflict_and_the_object_is_left_as_found() -> None:
    fake = FakeCluster()
    scope = Scope(namespace=NS, pools=(pool(),))
    passes = converged(fake, scope)
    edit_sandbox(fake)
    fake.fail("restore_sandbox", ClusterError(422, "Invalid", "spec.podTemplate: immutable"))

    result = passes.run(scope)
    assert result.errors == [] and result.changed == 0
    [conflict] = result.conflicts
    assert "restore sandbox svc/sandbox-docs-0 refused" in conflict
    assert fake.restored == [] and container(fake)["image"] == "evil:1"


def test_the_listing_reports_the_edited_paths_of_the_wanted_objects_only() -> None:
    fake = FakeCluster()
    scope = Scope(namespace=NS, pools=(pool(),))
    converged(fake, scope)
    edit_sandbox(fake)
    wanted = pool_objects(pool(), NS)
    assert fake.list_pool_objects(NS, "docs").drift == {}  # nothing asked about
    found = fake.list_pool_objects(NS, "docs", [*wanted.sandboxes.values(),
                                                *wanted.claims.values()])
    assert found.drift == {("sandbox", "sandbox-docs-0"): (
        f"metadata.annotations.{REPLICAS_KEY}", "spec.podTemplate.spec.containers[0].image")}


def test_conflicts_no_longer_found_are_forgotten_and_warned_again_if_they_return() -> None:
    """The conflicts held are those of each namespace's last pass: a long-running reconciler
    meeting ever new conflicts (sizes an operator keeps changing) holds no more than the current
    ones, while ``reported`` counts every distinct warning (a counter never goes down)."""
    fake = FakeCluster()
    scope = Scope(namespace=NS, pools=(pool(),))
    passes = converged(fake, scope)
    for size in range(2, 12):  # ten distinct conflicts over time, one at a time
        fake.edit(*WORKSPACE, {"spec": {"resources": {"requests": {"storage": f"{size}Gi"}}}})
        [conflict] = passes.run(scope).conflicts
        assert f"size {size}Gi" in conflict
        assert passes.held() == 1
    assert passes.reported == 10
    fake.edit(*WORKSPACE, {"spec": {"resources": {"requests": {"storage": "1Gi"}}}})
    assert passes.run(scope).conflicts == [] and passes.held() == 0
    fake.edit(*WORKSPACE, {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    passes.run(scope)
    assert passes.reported == 11  # a conflict that returns is warned of again
