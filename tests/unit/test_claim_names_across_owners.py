"""One PVC name, one owner, at create time: the name computation across owners (a context's
claim ``context-<name>`` against a pool's workspace claims ``<pool>-workspace[-<i>]``) and the
two create-time checks over recorded owners, with the cluster empty (nothing reconciled yet)."""

from __future__ import annotations

import pytest

from context_service.domain.cluster import context_claim_name, workspace_claim_name
from context_service.domain.errors import ContextExistsError, PoolExistsError
from context_service.domain.pool.references import (
    contexts_claiming,
    ensure_no_context_claims,
    workspace_claim_names,
)
from context_service.domain.pool.state import PoolState
from context_service.domain.reconcile.guard import ClaimNameGuard, pool_workspaces_named
from tests.support.fake_cluster import FakeCluster

NS = "team"


def test_a_pools_workspace_claims_per_strategy() -> None:
    assert workspace_claim_names("p", "shared", 3) == ["p-workspace"]
    assert workspace_claim_names("p", "dedicated", 2) == ["p-workspace-0", "p-workspace-1"]
    assert workspace_claim_names("p", "existing-claim", 2) == []
    assert workspace_claim_names("p", "warm-pool", 2) == []


def test_the_contexts_whose_claim_a_pool_would_create() -> None:
    assert contexts_claiming("context-x", "shared", 1) == ["x-workspace"]
    assert contexts_claiming("context-x", "dedicated", 2) == ["x-workspace-0", "x-workspace-1"]
    assert contexts_claiming("context", "shared", 1) == ["workspace"]
    # no claim of a pool outside the "context-" prefix can be a context's claim
    assert contexts_claiming("x", "shared", 1) == []
    assert contexts_claiming("contextx", "dedicated", 1) == []
    assert contexts_claiming("context-x", "existing-claim", 1) == []
    for context in contexts_claiming("context-a-b", "dedicated", 3):
        assert context_claim_name(context) in workspace_claim_names("context-a-b", "dedicated", 3)


def test_the_pool_workspaces_a_contexts_claim_would_be() -> None:
    assert pool_workspaces_named(context_claim_name("x-workspace")) == [("context-x", None)]
    assert pool_workspaces_named(context_claim_name("x-workspace-12")) == [("context-x", 12)]
    assert pool_workspaces_named(context_claim_name("workspace")) == [("context", None)]
    assert pool_workspaces_named(context_claim_name("a-workspace-workspace-0")) == [
        ("context-a-workspace", 0)]
    # only names a pool writes: a decimal index without leading zeros, a non-empty pool name
    for name in ("x", "x-workspace-01", "x-workspace-", "x-workspaces", "x-workspace-1a"):
        assert pool_workspaces_named(context_claim_name(name)) == [], name
    assert pool_workspaces_named("-workspace") == []
    for claim in (context_claim_name("x-workspace"), context_claim_name("x-workspace-3")):
        assert [workspace_claim_name(p, i) for p, i in pool_workspaces_named(claim)] == [claim]


def pool(name: str, strategy: str, replicas: int) -> PoolState:
    return PoolState(live=True, name=name, namespace=NS, replicas=replicas, strategy=strategy)


def test_the_context_guard_refuses_a_name_a_recorded_pool_would_claim() -> None:
    pools = {p.name: p for p in (pool("context-s", "shared", 1),
                                 pool("context-d", "dedicated", 2),
                                 pool("context-e", "existing-claim", 2))}
    asked: list[str] = []

    def live_pool(name: str) -> PoolState | None:
        asked.append(name)
        return pools.get(name)

    guard = ClaimNameGuard(FakeCluster(), pool_namespace=NS, live_pool=live_pool)
    for taken in ("s-workspace", "d-workspace-0", "d-workspace-1"):
        with pytest.raises(ContextExistsError):
            guard(NS, taken)
    for free in ("d-workspace", "d-workspace-2", "e-workspace", "e-workspace-0", "s-workspace-0",
                 "notes"):
        guard(NS, free)
    # another namespace than the pools' never collides, and is never looked up
    asked.clear()
    guard("elsewhere", "s-workspace")
    assert asked == []
    # one lookup by the computed pool name, none for a name no pool claim can match
    guard(NS, "notes")
    guard(NS, "q-workspace-4")
    assert asked == ["context-q"]


def test_the_pool_check_refuses_a_name_a_live_context_claims() -> None:
    live = {"x-workspace", "y-workspace-1"}
    asked: list[str] = []

    def live_context(name: str) -> bool:
        asked.append(name)
        return name in live

    with pytest.raises(PoolExistsError):
        ensure_no_context_claims(live_context, "context-x", "shared", 1)
    with pytest.raises(PoolExistsError):
        ensure_no_context_claims(live_context, "context-y", "dedicated", 2)
    ensure_no_context_claims(live_context, "context-y", "dedicated", 1)
    ensure_no_context_claims(live_context, "context-x", "dedicated", 3)
    asked.clear()
    ensure_no_context_claims(live_context, "plain", "shared", 1)
    ensure_no_context_claims(live_context, "context-x", "existing-claim", 1)
    assert asked == []
