"""Edges of pool reconciliation and adoption, pure or over the in-memory cluster: one pool whose
action fails holds back only its own later stage, a failing namespace is retried whole, and
adoption reports (never crashes on, never imports) groups this service could not have made; an
unexpected error in one action is that action's alone."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from context_service.adapters.kubernetes.reconciler_pass import NamespacePass
from context_service.adapters.kubernetes.reconciler_scopes import DirtySet
from context_service.domain.cluster import (
    BuiltinRuntime,
    ClaimInfo,
    ClusterError,
    PoolObjects,
    PoolSandbox,
    SandboxInfo,
    WorkspaceClaim,
)
from context_service.domain.pool.adoption import group_pools
from context_service.domain.pool.events import Workspace
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile.plan import Scope
from tests.support.fake_cluster import FakeCluster

NS = "svc"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
RUNTIME = BuiltinRuntime(image="busybox:1.36")
QUOTA = ClusterError(403, "Forbidden", 'persistentvolumeclaims "x" is forbidden: exceeded quota')


class _Log:
    """Stands in for the applications: every observation command is accepted."""

    def execute(self, *_: Any) -> Any:
        return SimpleNamespace(position=1)


def _pool(name: str, strategy: str, live: bool = True) -> PoolState:
    mode = "ReadWriteMany" if strategy == "shared" else "ReadWriteOnce"
    return PoolState(live=live, released=not live, name=name, namespace=NS, replicas=1,
                     strategy=strategy, workspace=Workspace(size="1Gi", access_mode=mode),
                     runtime=RUNTIME)


def _names(fake: FakeCluster, pool: str) -> list[str]:
    objects = fake.list_pool_objects(NS, pool)
    return sorted(o.name for o in (*objects.sandboxes, *objects.claims))


def test_a_failed_pvc_holds_back_only_its_own_pool() -> None:
    fake = FakeCluster()
    fake.ensure_workspace_claim(WorkspaceClaim(namespace=NS, pool="old", index=None, replicas=1,
                                               size="1Gi", access_mode="ReadWriteMany"))
    fake.ensure_sandbox(PoolSandbox(namespace=NS, pool="old", index=0, replicas=1,
                                    claim="old-workspace", runtime=RUNTIME))
    fake.fail("ensure_workspace_claim", QUOTA)  # the PVC of "new" is refused, once
    scope = Scope(namespace=NS, pools=(_pool("new", "dedicated"), _pool("ok", "shared"),
                                       _pool("old", "shared", live=False)))
    passes = NamespacePass(fake, _Log(), _Log(), None, lambda: T0)  # type: ignore[arg-type]

    result = passes.run(scope)
    assert len(result.errors) == 1 and "exceeded quota" in result.errors[0]
    assert _names(fake, "new") == []  # its Sandbox waits for its PVC
    assert _names(fake, "ok") == ["ok-workspace", "sandbox-ok-0"]  # others go on: their
    assert _names(fake, "old") == []  # Sandboxes are made, a released pool's PVC is deleted

    assert passes.run(scope).errors == []
    assert _names(fake, "new") == ["new-workspace-0", "sandbox-new-0"]


def test_a_failing_namespace_is_retried_whole() -> None:
    dirty = DirtySet(base=0.5, cap=2.0)
    dirty.retry(NS, [("pool", "bad")], 10.0)
    dirty.resync([NS], 10.2)  # skipped: the namespace is backing off
    assert sorted(dirty.take_due(10.5)) == [("ns", NS), ("pool", "bad")]


def _sandbox(pool: str, replicas: str) -> SandboxInfo:
    labels = {"app.kubernetes.io/managed-by": "context-service",
              "context.rossoctl.io/pool": pool}
    return SandboxInfo(namespace=NS, name=f"sandbox-{pool}-0", ready=True, labels=labels,
                       annotations={"context.rossoctl.io/replicas": replicas})


def test_adoption_reports_groups_it_could_never_converge() -> None:
    objects = PoolObjects(sandboxes=(
        _sandbox("sup", "\u00b2"), _sandbox("huge", "1000"), _sandbox("long", "9" * 40),
        _sandbox("Team_A", "1"), _sandbox("x" * 51, "1"), _sandbox("fine", "100"),
        _sandbox("lost", "1")), claims=(ClaimInfo(
            namespace=NS, name="fine-workspace", phase="Bound", storage_class="",
            access_modes=("ReadWriteMany",), size="1Gi",
            labels=_sandbox("fine", "100").labels),))
    found = {p.name: p for p in group_pools(objects, NS, T0, "service:x")}
    for name in ("sup", "huge", "long"):
        assert found[name].event is None and "replica count" in found[name].reason, name
    for name in ("Team_A", "x" * 51):
        assert found[name].event is None and "pool name" in found[name].reason, name
    # Sandboxes of a managed workspace whose PVCs are gone: the size went with them
    assert found["lost"].event is None and "no workspace PVC" in found["lost"].reason
    fine = found["fine"].event
    assert fine is not None and fine.replicas == 100 and fine.adopted


def test_a_defect_in_one_action_fails_that_action_not_the_pass() -> None:
    """Not only a ``ClusterError``: any exception of one action is that action's error, and
    the rest of the namespace is reconciled (it escaped before and failed every item)."""
    fake = FakeCluster()
    fake.fail("ensure_workspace_claim", ValueError("unexpected"))  # type: ignore[arg-type]
    scope = Scope(namespace=NS, pools=(_pool("new", "dedicated"), _pool("ok", "shared")))
    result = NamespacePass(fake, _Log(), _Log(), None,  # type: ignore[arg-type]
                           lambda: T0).run(scope)
    assert len(result.errors) == 1 and "ValueError" in result.errors[0]
    assert _names(fake, "ok") == ["ok-workspace", "sandbox-ok-0"]
