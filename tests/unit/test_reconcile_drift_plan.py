"""Drift and name ownership in the pure plan: objects whose service-set fields were edited are
restored (never an adopted pool's Sandboxes, never an object being deleted), a PVC whose
immutable spec no longer matches is reported instead of patched, and a PVC name wanted by two
owners (context ``x-workspace`` and pool ``context-x`` both want ``context-x-workspace``) stays
with the owner whose labels it carries: the other one is reported and never touches it. A
restore the server refuses is a conflict too, never an error retried with backoff."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec

from context_service.adapters.kubernetes.reconciler_pass import NamespacePass, PassResult
from context_service.domain.cluster import (
    MANAGED_BY,
    MANAGER,
    NAME_LABEL,
    POOL_LABEL,
    TYPE_LABEL,
    BuiltinRuntime,
    ClaimInfo,
    ClusterError,
    PoolObjects,
    PoolSandbox,
    SandboxInfo,
)
from context_service.domain.context.events import Storage
from context_service.domain.context.state import ContextState
from context_service.domain.pool.events import Workspace
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile.actions import (
    CreateSandbox,
    CreateWorkspaceClaim,
    EnsureContextClaim,
    RestoreSandbox,
    RestoreWorkspaceClaim,
    owner,
)
from context_service.domain.reconcile.desired import context_claim
from context_service.domain.reconcile.plan import (
    Observed,
    Scope,
    conflicts,
    own_claim,
    plan,
)
from tests.support.fake_cluster import FakeCluster

NS = "svc"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
RUNTIME = BuiltinRuntime(image="busybox:1.36")


def shared_pool(name: str = "docs", **kw: Any) -> PoolState:
    fields: dict[str, Any] = dict(
        live=True, name=name, namespace=NS, replicas=1, strategy="shared",
        workspace=Workspace(size="1Gi", access_mode="ReadWriteMany"), runtime=RUNTIME)
    fields.update(kw)
    return PoolState(**fields)


def context(name: str = "notes", **kw: Any) -> ContextState:
    fields: dict[str, Any] = dict(live=True, namespace=NS, name=name, type="memory",
                                  storage=Storage("pvc", "1Gi", "ReadWriteOnce"))
    fields.update(kw)
    return ContextState(**fields)


def pvc(name: str, labels: dict[str, str], **kw: Any) -> ClaimInfo:
    fields: dict[str, Any] = dict(namespace=NS, name=name, phase="Bound", storage_class="",
                                  access_modes=("ReadWriteMany",), size="1Gi", labels=labels)
    fields.update(kw)
    return ClaimInfo(**fields)


def pool_labels(pool: str) -> dict[str, str]:
    return {POOL_LABEL: pool, MANAGED_BY: MANAGER, "context.rossoctl.io/replicas": "1"}


def context_labels(name: str) -> dict[str, str]:
    return {MANAGED_BY: MANAGER, NAME_LABEL: name, TYPE_LABEL: "memory"}


def converged_docs(**drift: tuple[str, ...]) -> Observed:
    objects = PoolObjects(
        claims=(pvc("docs-workspace", pool_labels("docs")),),
        sandboxes=(SandboxInfo(namespace=NS, name="sandbox-docs-0", ready=True,
                               labels=pool_labels("docs")),))
    keys = {("sandbox", "sandbox-docs-0"): drift.get("sandbox", ()),
            ("pvc", "docs-workspace"): drift.get("pvc", ())}
    return Observed(pool_objects=objects, drift={k: v for k, v in keys.items() if v})


# --- drift ------------------------------------------------------------------------------------


def test_a_drifted_sandbox_and_workspace_claim_are_restored() -> None:
    scope = Scope(namespace=NS, pools=(shared_pool(),))
    assert plan(scope, converged_docs()) == []
    observed = converged_docs(sandbox=("spec.podTemplate.spec.containers",),
                              pvc=("metadata.labels.context.rossoctl.io/replicas",))
    actions = plan(scope, observed)
    assert [type(a) for a in actions] == [RestoreWorkspaceClaim, RestoreSandbox]
    restore = actions[1]
    assert isinstance(restore, RestoreSandbox)
    assert (restore.sandbox.pool, restore.sandbox.index, restore.sandbox.claim) == (
        "docs", 0, "docs-workspace")
    assert [owner(a) for a in actions] == ["", ""]  # nothing waits for a restore
    assert conflicts(scope, observed) == []


def test_an_adopted_pools_sandboxes_are_never_rewritten() -> None:
    scope = Scope(namespace=NS, pools=(shared_pool(adopted=True),))
    assert plan(scope, converged_docs(sandbox=("spec",))) == []


def test_an_object_being_deleted_is_not_restored() -> None:
    objects = PoolObjects(
        claims=(pvc("docs-workspace", pool_labels("docs")),),
        sandboxes=(SandboxInfo(namespace=NS, name="sandbox-docs-0", ready=True, deleting=True,
                               labels=pool_labels("docs")),))
    observed = Observed(pool_objects=objects, drift={("sandbox", "sandbox-docs-0"): ("spec",)})
    assert plan(Scope(namespace=NS, pools=(shared_pool(),)), observed) == []


def test_immutable_claim_drift_is_reported_not_patched() -> None:
    grown = pvc("docs-workspace", pool_labels("docs"), size="2Gi")
    observed = Observed(pool_objects=PoolObjects(
        claims=(grown,), sandboxes=converged_docs().pool_objects.sandboxes))
    scope = Scope(namespace=NS, pools=(shared_pool(),))
    assert plan(scope, observed) == []
    [report] = conflicts(scope, observed)
    assert "pvc svc/docs-workspace" in report and "size 2Gi" in report and "1Gi" in report

    notes = context(storage=Storage("pvc", "1Gi", "ReadWriteOnce", "fast"))
    wanted = context_claim(notes)
    claim = pvc("context-notes", context_labels("notes"), access_modes=("ReadWriteOnce",),
                storage_class="slow", annotations=wanted.annotations)
    observed = Observed(context_claims={"context-notes": claim})
    scope = Scope(namespace=NS, contexts=(notes,))
    assert plan(scope, observed) == []
    [report] = conflicts(scope, observed)
    assert "storageClassName slow" in report and "context svc/notes" in report


# --- one owner per name -----------------------------------------------------------------------


def test_a_context_never_takes_a_pools_claim() -> None:
    taken = pvc("context-x-workspace", pool_labels("context-x"))
    ctx = context("x-workspace")
    observed = Observed(context_claims={"context-x-workspace": taken})
    scope = Scope(namespace=NS, contexts=(ctx,))
    assert plan(scope, observed) == []  # no metadata patch onto the pool's claim
    [report] = conflicts(scope, observed)
    assert "pool context-x" in report and "context svc/x-workspace" in report
    assert own_claim(ctx, taken) is None  # its status never reads the pool's claim

    deleted = msgspec.structs.replace(ctx, live=False)
    assert plan(Scope(namespace=NS, contexts=(deleted,)), observed) == []


def test_a_context_still_repairs_its_own_unlabelled_claim() -> None:
    ctx = context()
    unlabelled = pvc("context-notes", {}, access_modes=("ReadWriteOnce",))
    actions = plan(Scope(namespace=NS, contexts=(ctx,)),
                   Observed(context_claims={"context-notes": unlabelled}))
    assert [type(a) for a in actions] == [EnsureContextClaim]
    assert own_claim(ctx, unlabelled) == unlabelled


def test_a_pool_never_mounts_a_claim_of_another_owner() -> None:
    taken = pvc("context-x-workspace", context_labels("x-workspace"))
    scope = Scope(namespace=NS, pools=(shared_pool("context-x"),))
    observed = Observed(named_claims={"context-x-workspace": taken})
    assert plan(scope, observed) == []  # neither the claim nor Sandboxes mounting it
    [report] = conflicts(scope, observed)
    assert "context svc/x-workspace" in report and "pool context-x" in report


def test_a_pool_relabels_its_own_claim_found_by_name() -> None:
    scope = Scope(namespace=NS, pools=(shared_pool(),))
    stripped = pvc("docs-workspace", {})
    actions = plan(scope, Observed(named_claims={"docs-workspace": stripped}))
    assert [type(a) for a in actions] == [RestoreWorkspaceClaim, CreateSandbox]
    assert not any(isinstance(a, CreateWorkspaceClaim) for a in actions)


# --- a restore the server refuses ---------------------------------------------------------------


def test_a_refused_restore_is_a_conflict_not_an_error_to_retry() -> None:
    sandbox = PoolSandbox(namespace=NS, pool="docs", index=0, replicas=1,
                          claim="docs-workspace", runtime=RUNTIME)
    refusing = FakeCluster()  # its server refuses the restore: an immutable field
    refusing.fail("restore_sandbox", ClusterError(422, "Invalid",
                                                  "spec.podTemplate: field is immutable"))
    passes = NamespacePass(refusing, None, None, None, lambda: T0)  # type: ignore[arg-type]
    result = PassResult()
    passes._carry_out([RestoreSandbox(sandbox=sandbox)], result)
    assert result.errors == []
    [conflict] = result.conflicts
    assert "restore sandbox svc/sandbox-docs-0 refused" in conflict and "immutable" in conflict
