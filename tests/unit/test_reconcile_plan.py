"""The planning function and the observation rules, by example (spec 6.3, 6.7, 6.8, 6.9, 3.6)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from context_service.domain.cluster import (
    MANAGED_BY,
    MANAGER,
    NAME_LABEL,
    POOL_LABEL,
    TYPE_LABEL,
    BuiltinRuntime,
    ClaimInfo,
    PodConsumer,
    PodInfo,
    PoolObjects,
    SandboxClaimInfo,
    SandboxInfo,
)
from context_service.domain.context.events import CloneSource, Grant, Retention, Storage
from context_service.domain.context.state import ContextState
from context_service.domain.errors import ContextExistsError
from context_service.domain.events import Subject
from context_service.domain.pool.events import Resource, Workspace
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile.actions import (
    CreateSandbox,
    CreateSandboxClaim,
    CreateWorkspaceClaim,
    DeleteClaim,
    DeleteSandbox,
    DeleteSandboxClaim,
    EnsureContextClaim,
)
from context_service.domain.reconcile.desired import context_claim, grants_json
from context_service.domain.reconcile.guard import ClaimNameGuard
from context_service.domain.reconcile.observe import observe_claim, observe_consumers, observe_pool
from context_service.domain.reconcile.plan import Observed, Scope, plan, plan_context, plan_pool
from tests.support.fake_cluster import FakeCluster

NS = "team"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
RUNTIME = BuiltinRuntime(image="busybox:1.36")


def pool(name: str = "docs", strategy: str = "dedicated", replicas: int = 2,
         **kw: Any) -> PoolState:
    workspace = {"dedicated": Workspace(size="1Gi", access_mode="ReadWriteOnce"),
                 "shared": Workspace(size="2Gi", access_mode="ReadWriteMany"),
                 "existing-claim": Workspace(claim_name="data", read_only=True),
                 "warm-pool": Workspace()}[strategy]
    fields: dict[str, Any] = dict(
        live=True, name=name, namespace=NS, replicas=replicas, strategy=strategy,
        workspace=workspace, runtime=None if strategy == "warm-pool" else RUNTIME,
        warm_pool_ref="warm" if strategy == "warm-pool" else "")
    fields.update(kw)
    return PoolState(**fields)


def labels(p: str, managed: bool = True) -> dict[str, str]:
    return {POOL_LABEL: p, **({MANAGED_BY: MANAGER} if managed else {})}


def sandbox(name: str, p: str = "docs", **kw: Any) -> SandboxInfo:
    return SandboxInfo(namespace=NS, name=name, ready=kw.pop("ready", False),
                       labels=kw.pop("labels", labels(p)), **kw)


def pvc(name: str, p: str = "docs", **kw: Any) -> ClaimInfo:
    fields: dict[str, Any] = dict(namespace=NS, name=name, phase="Bound", storage_class="",
                                  access_modes=("ReadWriteOnce",), size="1Gi", labels=labels(p))
    fields.update(kw)
    return ClaimInfo(**fields)


def claim(name: str, p: str = "agents", **kw: Any) -> SandboxClaimInfo:
    return SandboxClaimInfo(namespace=NS, name=name, warm_pool="warm", ready=kw.pop("ready", False),
                            labels=kw.pop("labels", labels(p)), **kw)


def pod(name: str, p: str = "docs", ready: bool = True, phase: str = "Running") -> PodInfo:
    return PodInfo(namespace=NS, name=name, phase=phase, ready=ready, labels={POOL_LABEL: p})


def kinds(actions: list[Any]) -> list[tuple[str, str]]:
    out = []
    for a in actions:
        if isinstance(a, CreateWorkspaceClaim):
            out.append(("create-pvc", f"{a.claim.pool}-workspace" + (
                "" if a.claim.index is None else f"-{a.claim.index}")))
        elif isinstance(a, CreateSandbox):
            out.append(("create-sandbox", f"sandbox-{a.sandbox.pool}-{a.sandbox.index}"))
        elif isinstance(a, CreateSandboxClaim):
            out.append(("create-claim", f"claim-{a.claim.pool}-{a.claim.index}"))
        elif isinstance(a, DeleteSandbox | DeleteSandboxClaim | DeleteClaim):
            out.append((type(a).__name__, a.name))
        else:
            out.append((type(a).__name__, a.claim.context))
    return out


# --- pools: creation -----------------------------------------------------------------------


def test_dedicated_pool_creates_its_pvcs_before_its_sandboxes() -> None:
    actions = plan(Scope(namespace=NS, pools=(pool(),)), Observed())
    assert kinds(actions) == [
        ("create-pvc", "docs-workspace-0"), ("create-pvc", "docs-workspace-1"),
        ("create-sandbox", "sandbox-docs-0"), ("create-sandbox", "sandbox-docs-1")]
    first = actions[2]
    assert isinstance(first, CreateSandbox)
    assert (first.sandbox.claim, first.sandbox.replicas, first.sandbox.read_only) == (
        "docs-workspace-0", 2, False)


def test_shared_pool_mounts_one_pvc() -> None:
    actions = plan_pool(pool(strategy="shared", replicas=3), NS, PoolObjects())
    assert kinds(actions)[0] == ("create-pvc", "docs-workspace")
    assert {a.sandbox.claim for a in actions if isinstance(a, CreateSandbox)} == {"docs-workspace"}


def test_existing_claim_pool_creates_sandboxes_only() -> None:
    actions = plan_pool(pool(strategy="existing-claim"), NS, PoolObjects())
    assert [type(a) for a in actions] == [CreateSandbox, CreateSandbox]
    first = actions[0]
    assert isinstance(first, CreateSandbox)
    assert (first.sandbox.claim, first.sandbox.read_only, first.sandbox.existing_claim) == (
        "data", True, True)


def test_warm_pool_creates_claims() -> None:
    actions = plan_pool(pool("agents", "warm-pool", 2), NS, PoolObjects())
    assert kinds(actions) == [("create-claim", "claim-agents-0"),
                              ("create-claim", "claim-agents-1")]
    first = actions[0]
    assert isinstance(first, CreateSandboxClaim) and first.claim.warm_pool == "warm"


def test_a_converged_pool_needs_nothing() -> None:
    objects = PoolObjects(sandboxes=(sandbox("sandbox-docs-0"), sandbox("sandbox-docs-1")),
                          claims=(pvc("docs-workspace-0"), pvc("docs-workspace-1")))
    assert plan_pool(pool(), NS, objects) == []


def test_objects_being_deleted_are_waited_for() -> None:
    objects = PoolObjects(sandboxes=(sandbox("sandbox-docs-0", deleting=True),),
                          claims=(pvc("docs-workspace-0", deleting=True),
                                  pvc("docs-workspace-1")))
    assert kinds(plan_pool(pool(), NS, objects)) == [("create-sandbox", "sandbox-docs-1")]


def test_extras_of_a_live_pool_are_deleted_but_strangers_are_not() -> None:
    objects = PoolObjects(
        sandboxes=(sandbox("sandbox-docs-0"), sandbox("sandbox-docs-2"),
                   sandbox("sandbox-docs-3", labels=labels("docs", managed=False)),
                   sandbox("sandbox-other-0", "other")),
        claims=(pvc("docs-workspace-0"), pvc("docs-workspace"), pvc("other-workspace", "other")))
    scope = Scope(namespace=NS, pools=(pool(replicas=1),))
    got = kinds(plan(scope, Observed(pool_objects=objects)))
    assert got == [("DeleteSandbox", "sandbox-docs-2"), ("DeleteClaim", "docs-workspace")]


def test_without_a_runtime_sandboxes_are_neither_made_nor_removed() -> None:
    objects = PoolObjects(sandboxes=(sandbox("sandbox-docs-0"),))
    got = kinds(plan_pool(pool(runtime=None), NS, objects))
    assert got == [("create-pvc", "docs-workspace-0"), ("create-pvc", "docs-workspace-1")]


# --- pools: release --------------------------------------------------------------------------


def test_release_of_a_direct_pool_deletes_sandboxes_then_pvcs() -> None:
    objects = PoolObjects(sandboxes=(sandbox("sandbox-docs-0"), sandbox("sandbox-docs-1")),
                          claims=(pvc("docs-workspace-0"),
                                  pvc("docs-workspace-1", deleting=True)),
                          pods=(pod("sandbox-docs-0"),))
    got = plan(Scope(namespace=NS, pools=(pool(live=False, released=True),)),
               Observed(pool_objects=objects))
    assert kinds(got) == [("DeleteSandbox", "sandbox-docs-0"), ("DeleteSandbox", "sandbox-docs-1"),
                          ("DeleteClaim", "docs-workspace-0")]
    assert [a.stage for a in got] == [0, 0, 1]


def test_release_never_deletes_the_existing_claim() -> None:
    objects = PoolObjects(sandboxes=(sandbox("sandbox-docs-0"),),
                          claims=(pvc("data"),))  # even if it somehow carried the labels
    got = plan_pool(pool(strategy="existing-claim", live=False), NS, objects)
    assert kinds(got) == [("DeleteSandbox", "sandbox-docs-0")]


def test_release_of_a_warm_pool_deletes_only_its_claims() -> None:
    objects = PoolObjects(sandbox_claims=(claim("claim-agents-0"),
                                          claim("claim-agents-1", deleting=True)),
                          sandboxes=(sandbox("claim-agents-0", "agents"),),
                          claims=(pvc("vct-claim-agents-0", "agents"),))
    got = plan_pool(pool("agents", "warm-pool", live=False), NS, objects)
    assert kinds(got) == [("DeleteSandboxClaim", "claim-agents-0")]


# --- contexts ----------------------------------------------------------------------------------

ALICE = Subject("user", "alice")


def context(**kw: Any) -> ContextState:
    fields: dict[str, Any] = dict(
        live=True, namespace=NS, name="notes", type="memory",
        storage=Storage("pvc", "1Gi", "ReadWriteOnce"),
        grants=(Grant(ALICE, ("read", "write", "attach", "derive", "administer"), T0),))
    fields.update(kw)
    return ContextState(**fields)


def observed_claim(state: ContextState, **kw: Any) -> ClaimInfo:
    desired = context_claim(state)
    fields: dict[str, Any] = dict(
        namespace=NS, name="context-notes", phase="Bound", storage_class="",
        access_modes=("ReadWriteOnce",), size="1Gi",
        labels={MANAGED_BY: MANAGER, NAME_LABEL: "notes", TYPE_LABEL: "memory"},
        annotations=dict(desired.annotations))
    fields.update(kw)
    return ClaimInfo(**fields)


def test_a_live_context_gets_its_claim_with_grants_and_revision() -> None:
    state = context(current_revision="sha256:abc")
    [action] = plan_context(state, None)
    assert isinstance(action, EnsureContextClaim)
    assert action.claim.annotations == {
        "context.rossoctl.io/access-grants":
            '[{"subject":{"kind":"user","name":"alice"},"permissions":["read","write","attach",'
            '"derive","administer"],"createdAt":"2026-03-01T09:00:00Z"}]',
        "context.rossoctl.io/current-revision": "sha256:abc"}
    assert (action.claim.size, action.claim.access_mode, action.claim.storage_class) == (
        "1Gi", "ReadWriteOnce", "")


def test_a_context_claim_in_sync_needs_nothing() -> None:
    state = context()
    assert plan_context(state, observed_claim(state)) == []


@pytest.mark.parametrize("drift", [
    {"labels": {MANAGED_BY: MANAGER, NAME_LABEL: "notes"}},
    {"annotations": {}},
    {"annotations": "stale-revision"},
])
def test_context_claim_metadata_drift_is_repaired(drift: dict[str, Any]) -> None:
    state = context()
    if drift.get("annotations") == "stale-revision":
        current = context_claim(state).annotations
        drift = {"annotations": {**current, "context.rossoctl.io/current-revision": "sha256:old"}}
    assert [type(a) for a in plan_context(state, observed_claim(state, **drift))] == [
        EnsureContextClaim]


def test_a_claim_being_deleted_is_not_recreated_yet() -> None:
    state = context()
    assert plan_context(state, observed_claim(state, deleting=True)) == []


def test_a_deleted_context_loses_its_managed_claim_only() -> None:
    gone = ContextState(live=False, namespace=NS, name="notes")
    assert kinds(plan_context(gone, observed_claim(context()))) == [
        ("DeleteClaim", "context-notes")]
    assert plan_context(gone, observed_claim(context(), labels={})) == []
    assert plan_context(gone, observed_claim(context(), deleting=True)) == []
    assert plan_context(gone, None) == []


def test_a_clone_claim_names_its_snapshot() -> None:
    state = context(clone_of=CloneSource("source", "daily", "sha256:1"))
    desired = context_claim(state)
    assert desired.source_snapshot == "context-source-daily"
    assert {k: v for k, v in desired.annotations.items() if "source" in k} == {
        "context.rossoctl.io/source-context": "source",
        "context.rossoctl.io/source-snapshot": "daily",
        "context.rossoctl.io/source-revision": "sha256:1"}


def test_retention_annotation_leaves_out_unset_fields() -> None:
    key = "context.rossoctl.io/snapshot-retention"
    assert key not in context_claim(context()).annotations
    both = context(retention=Retention(keep_last=3, max_age="168h"))
    assert context_claim(both).annotations[key] == '{"keepLast":3,"maxAge":"168h"}'
    age = context(retention=Retention(max_age="24h"))
    assert context_claim(age).annotations[key] == '{"maxAge":"24h"}'
    state = context()
    stale = observed_claim(state, annotations={**context_claim(state).annotations,
                                               key: '{"keepLast":1}'})
    assert [type(a) for a in plan_context(state, stale)] == [EnsureContextClaim]


def test_grants_annotation_keeps_fractional_seconds() -> None:
    grant = Grant(Subject("agent", "bot"), ("read",), T0.replace(microsecond=1))
    assert msgspec.json.decode(grants_json((grant,)))[0]["createdAt"] == (
        "2026-03-01T09:00:00.000001Z")


# --- observations ------------------------------------------------------------------------------


def test_pool_status_follows_the_spec_example() -> None:
    objects = PoolObjects(
        sandboxes=(sandbox("sandbox-docs-1", reason=""), sandbox("sandbox-docs-0", ready=True)),
        pods=(pod("sandbox-docs-1", ready=False, phase=""), pod("sandbox-docs-0")),
        claims=(pvc("docs-workspace", phase="Bound"),))
    command = observe_pool(pool(strategy="shared"), objects, None)
    assert command.ready_replicas == 1
    assert command.resources == (
        Resource("sandbox", "sandbox-docs-0", "Ready"),
        Resource("sandbox", "sandbox-docs-1", "Provisioning"),
        Resource("pod", "sandbox-docs-0", "Running"), Resource("pod", "sandbox-docs-1", "Pending"),
        Resource("pvc", "docs-workspace", "Bound"))
    assert command.workspace is None


def test_resources_sort_names_as_plain_strings_and_show_reasons() -> None:
    objects = PoolObjects(sandboxes=tuple(
        sandbox(f"sandbox-x-{i}", "x", reason="DependenciesNotReady") for i in (2, 10)))
    command = observe_pool(pool("x", replicas=11), objects, None)
    assert [(r.name, r.status) for r in command.resources] == [
        ("sandbox-x-10", "DependenciesNotReady"), ("sandbox-x-2", "DependenciesNotReady")]


def test_warm_pool_readiness_counts_ready_claims() -> None:
    objects = PoolObjects(
        sandbox_claims=(claim("claim-agents-0", ready=True),
                        claim("claim-agents-1", reason="WarmPoolNotReady")),
        pods=(pod("claim-agents-0", "agents"), pod("claim-agents-1", "agents")))
    command = observe_pool(pool("agents", "warm-pool"), objects, None)
    assert command.ready_replicas == 1
    assert [(r.kind, r.status) for r in command.resources] == [
        ("sandboxclaim", "Ready"), ("sandboxclaim", "WarmPoolNotReady"),
        ("pod", "Running"), ("pod", "Running")]


def test_extra_ready_pods_keep_a_pool_provisioning() -> None:
    objects = PoolObjects(pods=(pod("sandbox-docs-0"), pod("old"), pod("sandbox-docs-1")))
    command = observe_pool(pool(), objects, None)
    assert command.ready_replicas == 3
    assert pool(ready_replicas=command.ready_replicas).status == "provisioning"


def test_existing_claim_is_reported_as_observed() -> None:
    existing = pvc("data", size="2048Mi", labels={}, storage_class="nfs",
                   access_modes=("ReadWriteMany", "ReadOnlyMany"))
    command = observe_pool(pool(strategy="existing-claim"), PoolObjects(), existing)
    assert command.workspace == Workspace(size="2Gi", access_mode="ReadWriteMany",
                                          storage_class="nfs", claim_name="data", read_only=True)
    assert command.resources == (Resource("pvc", "data", "Bound"),)


def test_claim_observation() -> None:
    assert (observe_claim(None).phase, observe_claim(None).storage_class) == ("", "")
    seen = observe_claim(pvc("context-notes", phase="Pending", storage_class="fast"))
    assert (seen.phase, seen.storage_class) == ("Pending", "fast")


def test_pod_consumers_follow_spec_3_6() -> None:
    pods = (PodConsumer(namespace=NS, pod="b", service_account="default",
                        access_mode="readOnly", active=False, since=None),
            PodConsumer(namespace=NS, pod="a", service_account="runner",
                        access_mode="readWrite", active=True, since=T0))
    consumers = observe_consumers(pods).consumers
    assert [(c.subject, c.kind, c.name, c.access_mode, c.active, c.desired) for c in consumers] == [
        (Subject("service", "team/runner"), "pod", "a", "readWrite", True, True),
        (Subject("service", "team/default"), "pod", "b", "readOnly", False, True)]
    assert consumers[0].since == T0


def test_name_guard_refuses_a_taken_claim_name() -> None:
    fake = FakeCluster()
    guard = ClaimNameGuard(fake)
    guard(NS, "notes")
    fake.add_claim(NS, "context-notes", labels={})
    with pytest.raises(ContextExistsError):
        guard(NS, "notes")
