"""Bounds held across modules: the context write model's cache keeps its documented bound, a
conflict is warned of once while it lasts whatever pools a pass covers, and an adopted warm pool
keeps within a pool's replica limit (spec 2.9)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

from context_service.adapters.eventstore.application import CACHE_EVENTS, ContextApplication
from context_service.adapters.kubernetes.reconciler_desired import Key
from context_service.adapters.kubernetes.reconciler_scopes import scopes_for
from context_service.domain.cluster import POOL_LABEL, PoolObjects, SandboxClaimInfo
from context_service.domain.pool.adoption import MAX_REPLICAS, group_pools
from context_service.domain.reconcile.plan import Scope
from context_service.domain.stream import Recorded, StreamRef, context_stream
from tests.support.fake_cluster import FakeCluster
from tests.unit.test_reconcile_drift_fake import NS, WORKSPACE, converged, pool

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class _Streams:
    """A log of the event store port's shape (``load``): each stream holds ``length`` events."""

    def __init__(self, length: int) -> None:
        self.length = length

    def load(self, stream: StreamRef, after_version: int = 0) -> list[Recorded]:
        return [Recorded(position=v, stream=stream, version=v, name="Noted", event=None)  # type: ignore[arg-type]
                for v in range(after_version + 1, self.length + 1)]


def test_the_context_write_model_keeps_a_context_of_more_than_fifty_events() -> None:
    """The context application's states are bounded by ``CACHE_EVENTS`` events like every other
    kind's: a context of 60 events (a few grants and revisions) is kept, not read again from
    the log for every command and every cached authorization."""
    app = ContextApplication(_Streams(60))  # type: ignore[arg-type]
    app.evolve = lambda state, _: state  # the log's events are stand-ins
    stream = context_stream("ns", "docs")
    assert app.load_stream(stream)[0] == 60
    assert app.cached(stream)[0] == 60
    assert app.held_events() == 60 <= CACHE_EVENTS


def _scope(desired: SimpleNamespace, *keys: Key) -> Scope:
    """The scope the reconciler passes over when ``keys`` are due (``scopes_for``)."""
    [(_, scope)] = scopes_for(list(keys), desired, NS)  # type: ignore[arg-type]
    return scope


def test_a_pass_over_another_pool_does_not_make_a_conflict_warned_again() -> None:
    """A pass covers only the pools whose log or objects changed (``scopes_for``). Such a pass
    over pool ``other`` cannot find pool ``docs``'s conflict; the next resync, which finds it
    again, must say nothing (docs/kubernetes.md: later passes that find it again say nothing),
    and the conflicts counter must not count it twice."""
    fake = FakeCluster()
    desired = SimpleNamespace(pools={"docs": pool(), "other": pool(name="other")}, contexts={})
    whole = _scope(desired, ("ns", NS))
    passes = converged(fake, whole)
    fake.edit(*WORKSPACE, {"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    [conflict] = passes.run(whole).conflicts
    assert "docs-workspace" in conflict and passes.reported == 1

    assert passes.run(_scope(desired, ("pool", "other"))).conflicts == []
    assert passes.run(whole).conflicts == [conflict]
    assert passes.reported == 1


def _warm_claim(pool_name: str, index: int) -> SandboxClaimInfo:
    return SandboxClaimInfo(namespace="ns", name=f"claim-{pool_name}-{index}", warm_pool="wp",
                            ready=True, deleting=False,
                            labels={"app.kubernetes.io/managed-by": "context-service",
                                    POOL_LABEL: pool_name})


def test_a_warm_pool_claim_of_a_high_index_does_not_adopt_a_pool_past_the_replica_limit() -> None:
    """Two claims of pool ``p``, one named ``claim-p-5000`` (an operator's, or any labelled
    claim): the adopted pool's size must stay within 1 to 100 replicas (spec 2.9) like every
    other adopted pool's, or its reconciler creates thousands of claims, each holding a warm
    sandbox."""
    objects = PoolObjects(sandbox_claims=(_warm_claim("p", 0), _warm_claim("p", 5000)))
    [found] = group_pools(objects, "ns", NOW, "service:x")
    assert found.event is None or found.event.replicas <= MAX_REPLICAS
