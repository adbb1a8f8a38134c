"""Grouping of labelled pool objects into adopted pools (spec 6.10)."""

from __future__ import annotations

from datetime import UTC, datetime

from context_service.domain.cluster import ClaimInfo, PoolObjects, SandboxClaimInfo, SandboxInfo
from context_service.domain.pool.adoption import group_pools

NOW = datetime(2026, 1, 1, tzinfo=UTC)
P = "context.rossoctl.io/"
MANAGED = {"app.kubernetes.io/managed-by": "context-service"}


def _labels(pool: str, **extra: str) -> dict[str, str]:
    return {**MANAGED, P + "pool": pool, **extra}


def _sandbox(pool: str, i: int, **notes: str) -> SandboxInfo:
    return SandboxInfo(namespace="ns", name=f"sandbox-{pool}-{i}", ready=True,
                       labels=_labels(pool), annotations={P + k: v for k, v in notes.items()})


def _pvc(name: str, pool: str, replicas: str = "", mode: str = "ReadWriteOnce") -> ClaimInfo:
    labels = _labels(pool, **({P + "replicas": replicas} if replicas else {}))
    return ClaimInfo(namespace="ns", name=name, phase="Bound", storage_class="fast",
                     access_modes=(mode,), size="1024Mi", labels=labels)


def test_each_strategy_is_recognised() -> None:
    objects = PoolObjects(
        sandbox_claims=(SandboxClaimInfo(namespace="ns", name="claim-warm-0", warm_pool="wp",
                                         ready=True, labels=_labels("warm")),
                        SandboxClaimInfo(namespace="ns", name="claim-warm-1", warm_pool="wp",
                                         ready=True, labels=_labels("warm"))),
        sandboxes=(_sandbox("ded", 0, replicas="2"), _sandbox("ded", 1, replicas="2"),
                   _sandbox("own", 0, replicas="1", **{"workspace-claim": "mine",
                                                       "workspace-read-only": "true"}),
                   _sandbox("shr", 0, replicas="3", **{"sandbox-profile": "dev"})),
        claims=(_pvc("ded-workspace-0", "ded"), _pvc("ded-workspace-1", "ded"),
                _pvc("shr-workspace", "shr", mode="ReadWriteMany")))
    found = {p.name: p.event for p in group_pools(objects, "ns", NOW, "service:x")}
    assert set(found) == {"warm", "ded", "own", "shr"}
    assert found["warm"] and (found["warm"].strategy, found["warm"].replicas,
                              found["warm"].warm_pool_ref) == ("warm-pool", 2, "wp")
    assert found["ded"] and (found["ded"].strategy, found["ded"].workspace.size) == ("dedicated",
                                                                                    "1Gi")
    assert found["own"] and found["own"].strategy == "existing-claim"
    assert found["own"].workspace.claim_name == "mine" and found["own"].workspace.read_only
    assert found["shr"] and (found["shr"].strategy, found["shr"].sandbox_profile,
                             found["shr"].replicas) == ("shared", "dev", 3)
    assert all(e is not None and e.adopted for e in found.values())


def test_a_group_without_a_positive_replica_count_is_reported() -> None:
    objects = PoolObjects(sandboxes=(_sandbox("bad", 0, replicas="zero"),),
                          claims=(_pvc("odd-workspace", "odd", replicas="0"),))
    results = {p.name: p for p in group_pools(objects, "ns", NOW, "service:x")}
    assert results["bad"].event is None and "replica" in results["bad"].reason
    assert results["odd"].event is None


def _warm_claim(pool: str, index: int, deleting: bool = False) -> SandboxClaimInfo:
    return SandboxClaimInfo(namespace="ns", name=f"claim-{pool}-{index}", warm_pool="wp",
                            ready=not deleting, deleting=deleting,
                            labels={**MANAGED, P + "pool": pool})


def _adopted_replicas(*claims: SandboxClaimInfo) -> int:
    [found] = group_pools(PoolObjects(sandbox_claims=claims), "ns", NOW, "service:x")
    assert found.event is not None, found.reason
    return found.event.replicas


def test_a_warm_pool_claim_being_replaced_does_not_shrink_the_adopted_pool() -> None:
    """A pool of three claims, one of which an operator deleted to get a fresh sandbox (the old
    installation's reconciler would have made it again): adopted with two replicas, the new
    reconciler wants ``claim-p-0`` and ``claim-p-1`` and deletes ``claim-p-2``, a sandbox in
    use. Only a group whose every object is being deleted is a release (docs/kubernetes.md)."""
    assert _adopted_replicas(_warm_claim("p", 0, deleting=True), _warm_claim("p", 1),
                             _warm_claim("p", 2)) == 3


def test_a_warm_pool_claim_deleted_past_the_pool_s_size_is_not_made_again() -> None:
    """The other half of the rule: a scale-down under way (the highest claim being deleted as an
    extra) is adopted at its new size."""
    assert _adopted_replicas(_warm_claim("p", 0), _warm_claim("p", 1),
                             _warm_claim("p", 2, deleting=True)) == 2
