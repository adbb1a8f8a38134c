"""Property: for random recorded pools and contexts and a random cluster (objects missing,
present, left over, drifted, being deleted, belonging to strangers), applying the plan
converges, applying the same plan twice changes nothing, and nothing outside the plan's reach
is touched. The cluster is the in-memory fake, which renders and parses like the adapter."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from context_service.adapters.kubernetes.reconciler_pass import observe
from context_service.domain.cluster import (
    MANAGED_BY,
    MANAGER,
    POOL_LABEL,
    TYPE_LABEL,
    BuiltinRuntime,
    PoolSandbox,
    WorkspaceClaim,
)
from context_service.domain.context.events import Grant, Storage
from context_service.domain.context.state import ContextState
from context_service.domain.events import Subject
from context_service.domain.pool.events import Workspace
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile import actions as steps
from context_service.domain.reconcile.desired import context_claim, pool_objects
from context_service.domain.reconcile.plan import Scope, plan
from tests.support.fake_cluster import FakeCluster

NS = "t"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
STRATEGIES = ("dedicated", "shared", "existing-claim", "warm-pool")
WORKSPACES = {"dedicated": Workspace(size="1Gi", access_mode="ReadWriteOnce"),
              "shared": Workspace(size="1Gi", access_mode="ReadWriteMany")}
Objects = dict[tuple[str, str, str], dict[str, Any]]


@st.composite
def pools(draw: st.DrawFn) -> tuple[PoolState, ...]:
    names = draw(st.lists(st.sampled_from("abcd"), unique=True, max_size=4))
    found = []
    for name in names:
        strategy = draw(st.sampled_from(STRATEGIES))
        workspace = WORKSPACES.get(strategy, Workspace())
        if strategy == "existing-claim":
            workspace = Workspace(claim_name=f"ext-{name}", read_only=draw(st.booleans()))
        direct = strategy != "warm-pool"
        runtime = BuiltinRuntime(image="img") if direct and draw(st.integers(0, 4)) else None
        live = draw(st.booleans())
        found.append(PoolState(
            live=live, released=not live, name=name, namespace=NS,
            replicas=draw(st.integers(1, 3)), strategy=strategy, workspace=workspace,
            runtime=runtime, warm_pool_ref="warm" if not direct else ""))
    return tuple(found)


@st.composite
def contexts(draw: st.DrawFn) -> tuple[ContextState, ...]:
    names = draw(st.lists(st.sampled_from(("n1", "n2", "n3")), unique=True, max_size=3))
    return tuple(ContextState(
        live=draw(st.booleans()), namespace=NS, name=name, type="memory",
        storage=Storage("pvc", "1Gi", "ReadWriteOnce"),
        grants=(Grant(Subject("user", "u"), ("read",), T0),),
        current_revision=draw(st.sampled_from(("", "sha256:1")))) for name in names)


def _mark_deleting(fake: FakeCluster, plural: str, name: str) -> None:
    fake.objects[(plural, NS, name)]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"


def seed_pool(fake: FakeCluster, data: st.DataObject, pool: PoolState) -> None:
    """Some of the pool's objects (as a live pool would have them), maybe extras, maybe some
    already being deleted; the caller's existing claim always exists."""
    template = msgspec.structs.replace(pool, live=True, runtime=BuiltinRuntime(image="img"))
    extra = msgspec.structs.replace(template, replicas=pool.replicas + 1)
    wanted = pool_objects(extra if data.draw(st.booleans()) else template, NS)
    if pool.strategy == "existing-claim":
        fake.add_claim(NS, pool.workspace.claim_name, labels={})
    made: list[tuple[str, str, Any]] = [
        *(("persistentvolumeclaims", n, c) for n, c in wanted.claims.items()),
        *(("sandboxes", n, s) for n, s in wanted.sandboxes.items()),
        *(("sandboxclaims", n, c) for n, c in wanted.sandbox_claims.items())]
    for plural, name, desired in made:
        if not data.draw(st.booleans()):
            continue
        steps.apply(fake, _create(desired))
        if data.draw(st.integers(0, 4)) == 0:
            _mark_deleting(fake, plural, name)


def _create(desired: Any) -> steps.Action:
    if isinstance(desired, WorkspaceClaim):
        return steps.CreateWorkspaceClaim(claim=desired)
    if isinstance(desired, PoolSandbox):
        return steps.CreateSandbox(sandbox=desired)
    return steps.CreateSandboxClaim(claim=desired)


def seed_context(fake: FakeCluster, data: st.DataObject, context: ContextState) -> None:
    """No claim, a current one, or one with drifted metadata; maybe being deleted."""
    choice = data.draw(st.sampled_from(("none", "current", "stale", "unlabelled")))
    if choice == "none":
        return
    live = msgspec.structs.replace(context, live=True)
    desired = context_claim(live)
    if choice == "stale":
        desired = msgspec.structs.replace(desired, annotations={
            "context.rossoctl.io/current-revision": "sha256:old"})
    fake.ensure_context_claim(desired)
    name = f"context-{context.name}"
    item = fake.objects[("persistentvolumeclaims", NS, name)]
    if choice == "stale":
        del item["metadata"]["labels"][TYPE_LABEL]
    if choice == "unlabelled":
        item["metadata"]["labels"] = {}
    if data.draw(st.integers(0, 4)) == 0:
        _mark_deleting(fake, "persistentvolumeclaims", name)


def seed_strangers(fake: FakeCluster) -> None:
    """Objects of a pool and a context the log does not know, and a warm pool and template."""
    sandbox = PoolSandbox(namespace=NS, pool="zz", index=0, replicas=1, claim="zz-workspace",
                          runtime=BuiltinRuntime(image="img"))
    steps.apply(fake, steps.CreateSandbox(sandbox=sandbox))
    steps.apply(fake, steps.CreateWorkspaceClaim(claim=WorkspaceClaim(
        namespace=NS, pool="zz", index=None, replicas=1, size="1Gi",
        access_mode="ReadWriteMany")))
    fake.ensure_context_claim(context_claim(ContextState(
        live=True, namespace=NS, name="unknown", type="state",
        storage=Storage("pvc", "1Gi", "ReadWriteOnce"))))
    fake.add_template(NS, "dev", {"podTemplate": {"spec": {"containers": [{"name": "c"}]}}})
    fake.add_warm_pool(NS, "warm", "dev")


def run(fake: FakeCluster, actions: list[steps.Action]) -> None:
    for action in actions:
        steps.apply(fake, action)


def snapshot(fake: FakeCluster) -> Objects:
    return copy.deepcopy(fake.objects)


def is_deleting(item: dict[str, Any]) -> bool:
    return bool(item["metadata"].get("deletionTimestamp"))


def untouchable(objects: Objects, scope: Scope) -> Objects:
    """Objects no plan for ``scope`` may change: strangers' objects, existing claims, warm pools
    and templates."""
    pools = {p.name for p in scope.pools}
    contexts = {f"context-{c.name}" for c in scope.contexts}
    claims = {p.workspace.claim_name for p in scope.pools if p.workspace.claim_name}
    kept = {}
    for key, item in objects.items():
        plural, _, name = key
        labels = item["metadata"].get("labels") or {}
        platform = plural in ("sandboxtemplates", "sandboxwarmpools") or name in claims
        stranger = bool(labels.get(POOL_LABEL)) and labels.get(POOL_LABEL) not in pools
        unknown = name.startswith("context-") and name not in contexts
        if platform or stranger or unknown:
            kept[key] = item
    return kept


@given(pools(), contexts(), st.data())
def test_applying_the_plan_converges_and_is_idempotent(
        recorded_pools: tuple[PoolState, ...], recorded_contexts: tuple[ContextState, ...],
        data: st.DataObject) -> None:
    fake = FakeCluster()
    fake.hold_deletes = True  # deletes take effect later, as with finalizers
    seed_strangers(fake)
    for pool in recorded_pools:
        seed_pool(fake, data, pool)
    for context in recorded_contexts:
        seed_context(fake, data, context)
    scope = Scope(namespace=NS, pools=recorded_pools, contexts=recorded_contexts)
    before = snapshot(fake)
    pending = any(is_deleting(item) for item in before.values())

    first = plan(scope, observe(fake, scope))
    check_no_redundant_writes(before, first)
    run(fake, first)
    once = snapshot(fake)
    run(fake, first)
    assert snapshot(fake) == once, "applying the same plan twice changed something"
    assert untouchable(once, scope) == untouchable(before, scope)

    fake.finish_deletes()
    second = plan(scope, observe(fake, scope))
    if not pending:
        assert second == [], "one application should converge"
    run(fake, second)
    fake.finish_deletes()
    assert plan(scope, observe(fake, scope)) == []
    check_converged(fake, scope)


def target(action: steps.Action) -> tuple[str, str]:
    """(plural, name) of the object an action writes."""
    match action:
        case steps.CreateWorkspaceClaim(claim=c):
            suffix = "" if c.index is None else f"-{c.index}"
            return "persistentvolumeclaims", f"{c.pool}-workspace{suffix}"
        case steps.CreateSandbox(sandbox=s):
            return "sandboxes", f"sandbox-{s.pool}-{s.index}"
        case steps.CreateSandboxClaim(claim=c2):
            return "sandboxclaims", f"claim-{c2.pool}-{c2.index}"
        case steps.EnsureContextClaim(claim=c3):
            return "persistentvolumeclaims", f"context-{c3.context}"
        case steps.RestoreWorkspaceClaim(claim=c4):
            suffix = "" if c4.index is None else f"-{c4.index}"
            return "persistentvolumeclaims", f"{c4.pool}-workspace{suffix}"
        case steps.RestoreSandbox(sandbox=s2):
            return "sandboxes", f"sandbox-{s2.pool}-{s2.index}"
        case steps.RestoreSandboxClaim(claim=c5):
            return "sandboxclaims", f"claim-{c5.pool}-{c5.index}"
        case steps.DeleteSandbox():
            return "sandboxes", action.name
        case steps.DeleteSandboxClaim():
            return "sandboxclaims", action.name
        case steps.DeleteClaim():
            return "persistentvolumeclaims", action.name


def check_no_redundant_writes(before: Objects, actions: list[steps.Action]) -> None:
    """Creates only for absent objects, deletes only for present ones not yet being deleted,
    nothing written twice, nothing written over an object being deleted."""
    targets = [target(a) for a in actions]
    assert len(set(targets)) == len(targets)
    for action, (plural, name) in zip(actions, targets, strict=True):
        item = before.get((plural, NS, name))
        if isinstance(action, steps.CreateWorkspaceClaim | steps.CreateSandbox
                      | steps.CreateSandboxClaim):
            assert item is None, name
        else:
            assert item is None or not is_deleting(item), name
            if not isinstance(action, steps.EnsureContextClaim):
                assert item is not None, name


def check_converged(fake: FakeCluster, scope: Scope) -> None:
    objects = observe(fake, scope)
    for pool in scope.pools:
        mine = {o.name for group in (objects.pool_objects.sandboxes,
                                     objects.pool_objects.sandbox_claims,
                                     objects.pool_objects.claims)
                for o in group if o.labels.get(POOL_LABEL) == pool.name
                and o.labels.get(MANAGED_BY) == MANAGER}
        if not pool.live:
            assert mine == set(), pool.name
            continue
        wanted = pool_objects(pool, NS)
        expected = {*wanted.claims, *wanted.sandboxes, *wanted.sandbox_claims}
        if pool.runtime is None:  # sandboxes can be neither made nor removed
            mine = {n for n in mine if not n.startswith("sandbox-")}
        assert mine == expected, pool.name
    for context in scope.contexts:
        claim = objects.context_claims.get(f"context-{context.name}")
        if context.live:
            assert claim is not None and not claim.deleting
        elif claim is not None:  # only a claim the service does not manage survives
            assert claim.labels.get(MANAGED_BY) != MANAGER
    for pool in scope.pools:
        if pool.strategy == "existing-claim":
            assert fake.get_claim(NS, pool.workspace.claim_name) is not None
