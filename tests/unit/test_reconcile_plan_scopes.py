"""What the reconciler plans next: the dirty set's backoff, watch notices mapped back onto
recorded items by deterministic object names, and due items grouped into namespace scopes."""

from __future__ import annotations

from typing import Any

from context_service.adapters.kubernetes.reconciler_desired import LogDesired
from context_service.adapters.kubernetes.reconciler_scopes import (
    DirtySet,
    keys_for_change,
    scopes_for,
)
from context_service.domain.cluster import Change
from context_service.domain.context.state import ContextState
from context_service.domain.pool.events import Workspace
from context_service.domain.pool.state import PoolState

DEFAULT = "svc"


def desired() -> LogDesired:
    found = LogDesired(store=None)  # type: ignore[arg-type]  # folded by hand below
    found.pools = {
        "docs": PoolState(live=True, name="docs", namespace=DEFAULT, strategy="dedicated"),
        "my-pool": PoolState(live=True, name="my-pool", namespace="", strategy="shared"),
        "ext": PoolState(live=True, name="ext", namespace=DEFAULT, strategy="existing-claim",
                         workspace=Workspace(claim_name="team-data")),
        "old": PoolState(live=False, released=True, name="old", namespace="elsewhere"),
    }
    found.contexts = {
        ("team", "notes"): ContextState(live=True, namespace="team", name="notes"),
        ("team", "gone"): ContextState(live=False, namespace="team", name="gone"),
        ("lab", "notes"): ContextState(live=True, namespace="lab", name="notes"),
    }
    return found


def change(kind: str, namespace: str, name: str) -> Change:
    return Change(kind=kind, namespace=namespace, name=name)


def test_notices_lead_back_to_pools_by_object_name() -> None:
    found = desired()
    cases: list[tuple[Change, set[Any]]] = [
        (change("sandboxes", DEFAULT, "sandbox-docs-10"), {("pool", "docs")}),
        (change("sandboxclaims", DEFAULT, "claim-my-pool-0"), {("pool", "my-pool")}),
        (change("persistentvolumeclaims", DEFAULT, "my-pool-workspace"), {("pool", "my-pool")}),
        (change("persistentvolumeclaims", DEFAULT, "docs-workspace-3"), {("pool", "docs")}),
        (change("persistentvolumeclaims", DEFAULT, "team-data"), {("pool", "ext")}),
        (change("sandboxes", "other", "sandbox-docs-0"), set()),  # same name, other namespace
        (change("sandboxes", DEFAULT, "sandbox-stranger-0"), set()),
        (change("volumesnapshots", DEFAULT, "context-docs-daily"), set()),
    ]
    for notice, keys in cases:
        assert keys_for_change(notice, found, DEFAULT) == keys, notice


def test_notices_lead_back_to_contexts() -> None:
    found = desired()
    assert keys_for_change(change("persistentvolumeclaims", "team", "context-notes"), found,
                           DEFAULT) == {("context", "team", "notes")}
    assert keys_for_change(change("persistentvolumeclaims", "team", "context-gone"), found,
                           DEFAULT) == {("context", "team", "gone")}
    # any Pod may mount a context claim: the namespace's live contexts look again
    assert keys_for_change(change("pods", "team", "web-1"), found, DEFAULT) == {
        ("context", "team", "notes")}
    assert keys_for_change(change("pods", DEFAULT, "sandbox-docs-0"), found, DEFAULT) == {
        ("pool", "docs")}


def test_a_relist_notice_marks_whole_namespaces() -> None:
    found = desired()
    assert keys_for_change(change("pods", "team", ""), found, DEFAULT) == {("ns", "team")}
    assert keys_for_change(change("pods", "", ""), found, DEFAULT) == {
        ("ns", n) for n in ("svc", "elsewhere", "team", "lab")}


def test_due_keys_group_into_namespace_scopes() -> None:
    found = desired()
    keys = [("pool", "docs"), ("context", "team", "notes"), ("ns", "lab"), ("pool", "unknown")]
    scopes = {s.namespace: (sorted(k), s) for k, s in scopes_for(keys, found, DEFAULT)}
    assert sorted(scopes) == ["lab", "svc", "team"]
    assert [p.name for p in scopes["svc"][1].pools] == ["docs"]
    assert [c.name for c in scopes["team"][1].contexts] == ["notes"]
    assert [c.name for c in scopes["lab"][1].contexts] == ["notes"]
    [(_, scope)] = list(scopes_for([("ns", DEFAULT)], found, DEFAULT))
    assert [p.name for p in scope.pools] == ["docs", "ext", "my-pool"]  # "" means the default


def test_failures_back_off_per_namespace_and_resync_waits_for_them() -> None:
    dirty = DirtySet(base=0.5, cap=2.0)
    dirty.mark(("pool", "a"), 10.0)
    assert dirty.take_due(9.0) == []
    assert dirty.take_due(10.0) == [("pool", "a")]
    delays = [dirty.retry("svc", [("pool", "a")], 10.0) for _ in range(4)]
    assert delays == [0.5, 1.0, 2.0, 2.0]
    assert dirty.next_due() == 10.5  # the earliest retry stands
    dirty.take_due(11.0)
    dirty.resync(["svc", "team"], 11.0)
    assert dirty.take_due(11.0) == [("ns", "team")]  # svc is backing off
    dirty.mark(("pool", "a"), 11.0)  # a notice cuts the backoff short
    assert dirty.take_due(11.0) == [("pool", "a")]
    dirty.succeeded("svc")
    dirty.resync(["svc"], 12.0)
    assert dirty.take_due(12.0) == [("ns", "svc")]
