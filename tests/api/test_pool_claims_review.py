"""Existing claims and warm pools as a demanding operator meets them (spec 1.12, 2.3 step 9,
6.9, 6.10), against the real API server: a claim whose life belongs to another pool, a warm
pool on its way out, and pool objects a fresh installation finds half deleted."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.eventstore.adoption import adopt
from context_service.adapters.kubernetes.cluster import SANDBOX, WARM_POOL, KubernetesCluster
from context_service.adapters.kubernetes.rest import JSON, PVCS, Rest
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import PoolSandboxClaim
from tests.support.pool_fixtures import Seed, eventually, manual_reconciler

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
POOLS = "/v1/sandbox-pools"
OWNER = {"X-Context-Subject": "user:alice"}
HOLD = "example.com/hold"
P = "context.rossoctl.io/"
MANAGED = {"app.kubernetes.io/managed-by": "context-service"}


def answer(response: Any) -> tuple[int, Any]:
    return response.status_code, response.json()


def refused(detail: str) -> tuple[int, Any]:
    return 400, {"error": "invalid_request", "message": f"invalid sandbox pool: {detail}"}


def test_a_workspace_of_another_pool_is_no_existing_claim(pool_client: TestClient[Any],
                                                          seed: Seed, kube_ns: str) -> None:
    """A managed workspace PVC lives and dies with its pool: releasing that pool deletes it
    (spec 6.9) from under the Sandboxes of any pool mounting it as its "existing" claim, which
    spec 6.7 says belongs to the caller and never carries a pool label. So it is refused."""
    shared = {"name": "a", "replicas": 1,
              "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"}}
    dedicated = {"name": "d", "replicas": 1,
                 "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}
    for body in (shared, dedicated):
        assert pool_client.post(POOLS, json=body).status_code == 201
    for claim, owner in (("a-workspace", "a"), ("d-workspace-0", "d")):
        eventually(lambda claim=claim: seed.read(PVCS.path(kube_ns, claim)))
        # before the access-mode rule: no replica count makes such a claim usable
        body = {"name": "b", "replicas": 2, "workspace": {"claimName": claim, "readOnly": False}}
        assert answer(pool_client.post(POOLS, json=body)) == refused(
            f'workspace claim "{claim}" belongs to sandbox pool "{owner}"'), claim
    assert sorted(p["name"] for p in pool_client.get(POOLS).json()["items"]) == ["a", "d"]


def test_a_claim_a_live_pool_wants_as_its_workspace_is_refused_before_it_is_labelled(
        kube_container: bootstrap.Container, seed: Seed, kube_ns: str) -> None:
    """Until the reconciler made a pool's PVC, one of that name without owner labels (made by
    hand, or whose labels an operator removed) is taken as the pool's own and labelled
    (docs/kubernetes.md, "One name, one owner"): from then on the pool's release deletes it.
    So the recorded pools are asked too, not only the labels."""
    kube_container.start_workers(("projections",))
    with TestClient(app=bootstrap.app(kube_container)) as client:
        for body in ({"name": "a", "replicas": 1,
                      "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"}},
                     {"name": "d", "replicas": 2,
                      "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}):
            assert client.post(POOLS, json=body).status_code == 201
        for claim, owner in (("a-workspace", "a"), ("d-workspace-1", "d")):
            seed.claim(claim)
            body = {"name": "b", "replicas": 1,
                    "workspace": {"claimName": claim, "readOnly": False}}
            assert answer(client.post(POOLS, json=body)) == refused(
                f'workspace claim "{claim}" belongs to sandbox pool "{owner}"'), claim
        seed.claim("d-workspace-2")  # pool d has two sandboxes: 0 and 1
        body = {"name": "b", "replicas": 1,
                "workspace": {"claimName": "d-workspace-2", "readOnly": False}}
        assert client.post(POOLS, json=body).status_code == 201
    manual_reconciler(kube_container).sync()
    labelled = seed.read(PVCS.path(kube_ns, "a-workspace"))
    assert labelled is not None
    assert labelled["metadata"]["labels"][P + "pool"] == "a"  # the hazard refused above


def test_a_labelled_workspace_of_a_pool_the_log_does_not_know_is_refused(
        pool_client: TestClient[Any], seed: Seed) -> None:
    """Labelled pool objects the log does not know become a pool at the next adoption, and
    then that pool's release deletes them (spec 6.10): their PVC is no caller's claim either.
    A PVC that only carries a pool label, without managed-by, is the caller's."""
    seed.claim("old-workspace", labels={**MANAGED, P + "pool": "old", P + "replicas": "1"})
    seed.claim("tagged", labels={P + "pool": "old"})
    body = {"name": "b", "replicas": 1,
            "workspace": {"claimName": "old-workspace", "readOnly": True}}
    assert answer(pool_client.post(POOLS, json=body)) == refused(
        'workspace claim "old-workspace" belongs to sandbox pool "old"')
    body["workspace"] = {"claimName": "tagged", "readOnly": True}
    assert pool_client.post(POOLS, json=body).status_code == 201


def test_a_named_context_claim_is_still_shared_with_a_pool(pool_client: TestClient[Any],
                                                           seed: Seed, kube_ns: str) -> None:
    """A context's attachment is the PVC a runtime mounts (spec 1.5): in the service namespace
    a pool may name it as its existing claim, and the pool reports it."""
    body = {"name": "notes", "namespace": kube_ns, "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteMany"}}
    assert pool_client.post("/v1/contexts", json=body, headers=OWNER).status_code == 201
    eventually(lambda: seed.read(PVCS.path(kube_ns, "context-notes")))
    pool = {"name": "readers", "replicas": 2,
            "workspace": {"claimName": "context-notes", "readOnly": True}}
    created = pool_client.post(POOLS, json=pool)
    assert created.status_code == 201, created.text
    assert created.json()["workspace"] == {"size": "1Gi", "accessMode": "ReadWriteMany",
                                           "claimName": "context-notes", "readOnly": True}


def _warm_pool(rest: Rest, ns: str, name: str, held: bool = False) -> None:
    metadata: JSON = {"name": name}
    if held:
        metadata["finalizers"] = [HOLD]
    rest.create(WARM_POOL.path(ns), {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
        "metadata": metadata, "spec": {"replicas": 2, "sandboxTemplateRef": {"name": "dev"}}},
        "test")


def test_a_warm_pool_being_deleted_is_refused(pool_client: TestClient[Any], seed: Seed,
                                              kube_rest: Rest, kube_ns: str) -> None:
    """A SandboxWarmPool on its way out hands out no sandbox: a pool claiming from it would
    stay provisioning for good, so it is refused like a warm pool that is not there."""
    seed.template("dev")
    _warm_pool(kube_rest, kube_ns, "going", held=True)
    kube_rest.delete(WARM_POOL.path(kube_ns, "going"))
    going = seed.read(WARM_POOL.path(kube_ns, "going"))
    assert going is not None and going["metadata"].get("deletionTimestamp")
    body = {"name": "agents", "replicas": 2, "warmPoolRef": "going"}
    assert answer(pool_client.post(POOLS, json=body)) == refused(
        'warm pool "going" is being deleted')
    assert pool_client.get(POOLS).json() == {"items": []}
    _warm_pool(kube_rest, kube_ns, "staying")
    body["warmPoolRef"] = "staying"
    assert pool_client.post(POOLS, json=body).status_code == 201


def test_the_development_stand_in_serves_no_claim_from_a_warm_pool_being_deleted(
        kube_cluster: KubernetesCluster, kube_rest: Rest, seed: Seed, kube_ns: str,
        kube_sim: DevSimulator) -> None:
    """The local control plane models the claim controller: a warm pool on its way out takes
    its sandboxes with it, so a claim it has not served yet stays unready, as on a cluster
    (a claim served before keeps its sandbox)."""
    seed.template("dev")
    _warm_pool(kube_rest, kube_ns, "going", held=True)
    for i in range(2):
        kube_cluster.ensure_sandbox_claim(
            PoolSandboxClaim(namespace=kube_ns, pool="agents", index=i, warm_pool="going"))
        if i == 0:
            kube_sim.settle()
            kube_rest.delete(WARM_POOL.path(kube_ns, "going"))
    kube_sim.settle()
    claims = kube_cluster.list_pool_objects(kube_ns, "agents").sandbox_claims
    assert [(c.name, c.ready, c.sandbox) for c in claims] == [
        ("claim-agents-0", True, "claim-agents-0"), ("claim-agents-1", False, "")]
    assert claims[1].reason == "WarmPoolNotReady"
    assert kube_cluster.get_sandbox(kube_ns, "claim-agents-1") is None


def _held_sandbox(rest: Rest, ns: str, name: str, pool: str, deleting: bool) -> None:
    rest.create(SANDBOX.path(ns), {
        "apiVersion": "agents.x-k8s.io/v1beta1", "kind": "Sandbox",
        "metadata": {"name": name, "labels": {**MANAGED, P + "pool": pool},
                     "finalizers": [HOLD],
                     "annotations": {P + "replicas": "1", P + "workspace-read-only": "false"}},
        "spec": {"podTemplate": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
        "test")
    if deleting:
        rest.delete(SANDBOX.path(ns, name))


def test_adoption_passes_over_a_pool_whose_objects_are_being_deleted(
        kube_container: bootstrap.Container, kube_cluster: KubernetesCluster, kube_rest: Rest,
        seed: Seed, kube_ns: str) -> None:
    """A released pool's objects linger while finalizers run. A fresh installation adopting
    them made the pool live again, and its reconciler recreated what was being deleted; only
    the objects that are not being deleted describe a pool."""
    labels = {**MANAGED, P + "pool": "gone", P + "replicas": "1"}
    seed.claim("gone-workspace", labels=labels)
    kube_rest.patch(PVCS.path(kube_ns, "gone-workspace"), {"metadata": {"finalizers": [HOLD]}},
                    "test")
    kube_rest.delete(PVCS.path(kube_ns, "gone-workspace"))
    _held_sandbox(kube_rest, kube_ns, "sandbox-gone-0", "gone", deleting=True)
    seed.claim("kept-workspace", labels={**labels, P + "pool": "kept"})
    _held_sandbox(kube_rest, kube_ns, "sandbox-kept-0", "kept", deleting=False)

    report = adopt(kube_cluster, kube_container.store, kube_ns)
    assert report.pools == ["kept"]
    assert "pool gone: its objects are being deleted" in report.not_imported
    assert not kube_container.pools.load("gone")[1].live
    assert kube_container.pools.load("kept")[1].live
