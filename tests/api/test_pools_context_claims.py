"""Context PVCs through HTTP with the in-process reconciler (spec 1.5, 3.6, 6.3): the claim is
created, the context turns ready once it is bound, Pods mounting it are observed consumers that
block a non-forced delete, and the claim goes once the context is deleted; the name guard
refuses names whose claim already exists."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from context_service.adapters.kubernetes.rest import PVCS, STORAGE_CLASSES, Rest
from context_service.devcluster.devsim import DevSimulator
from tests.support.pool_fixtures import Seed, eventually

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
OWNER = {"X-Context-Subject": "user:alice"}


def create(client: TestClient[Any], ns: str, name: str, **storage: Any) -> Any:
    body = {"name": name, "namespace": ns, "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce",
                        **storage}}
    return client.post("/v1/contexts", json=body, headers=OWNER)


def read(client: TestClient[Any], ns: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = client.get(f"/v1/namespaces/{ns}/contexts/{name}",
                                       headers=OWNER).json()
    return found


def test_context_claim_lifecycle(pool_client: TestClient[Any], kube_ns: str, seed: Seed,
                                 kube_sim: DevSimulator) -> None:
    created = create(pool_client, kube_ns, "notes")
    assert created.status_code == 201
    assert created.json()["status"] == "provisioning"
    path = PVCS.path(kube_ns, "context-notes")
    claim = eventually(lambda: seed.read(path))
    assert claim["metadata"]["labels"]["context.rossoctl.io/name"] == "notes"
    assert claim["metadata"]["annotations"]["context.rossoctl.io/access-grants"].startswith(
        '[{"subject":{"kind":"user","name":"alice"}')

    kube_sim.settle()
    eventually(lambda: read(pool_client, kube_ns, "notes")["status"] == "ready")

    seed.pod("writer", "context-notes", service_account="agent-sa")
    seed.pod("reader", "context-notes", read_only=True)
    kube_sim.settle()

    def consumers() -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = read(pool_client, kube_ns, "notes").get("consumers", [])
        assert [(c["name"], c["active"]) for c in found] == [("reader", True), ("writer", True)]
        return found

    reader, writer = eventually(consumers)
    assert writer["subject"] == {"kind": "service", "name": f"{kube_ns}/agent-sa"}
    assert (writer["kind"], writer["accessMode"], writer["desired"]) == ("pod", "readWrite", True)
    assert (reader["subject"]["name"], reader["accessMode"]) == (f"{kube_ns}/default", "readOnly")

    refused = pool_client.delete(f"/v1/namespaces/{kube_ns}/contexts/notes", headers=OWNER)
    assert refused.status_code == 409
    assert refused.json() == {"error": "in_use", "message": (
        "context resource is in use: notes is used by pod/reader, pod/writer; "
        "detach consumers or use force deletion")}

    seed.delete_pod("reader")
    seed.delete_pod("writer")
    eventually(lambda: "consumers" not in read(pool_client, kube_ns, "notes"))
    deleted = pool_client.delete(f"/v1/namespaces/{kube_ns}/contexts/notes", headers=OWNER)
    assert deleted.status_code == 204
    eventually(lambda: seed.read(path) is None)


def test_a_finished_pod_still_blocks_and_force_skips_the_check(
        pool_client: TestClient[Any], kube_ns: str, seed: Seed, kube_sim: DevSimulator) -> None:
    assert create(pool_client, kube_ns, "logs").status_code == 201
    seed.pod("job", "context-logs")
    eventually(lambda: read(pool_client, kube_ns, "logs").get("consumers"))
    [job] = read(pool_client, kube_ns, "logs")["consumers"]
    assert job["active"] is False  # pending: observed, not running
    assert pool_client.delete(f"/v1/namespaces/{kube_ns}/contexts/logs",
                              headers=OWNER).status_code == 409
    assert pool_client.delete(f"/v1/namespaces/{kube_ns}/contexts/logs?force=true",
                              headers=OWNER).status_code == 204
    eventually(lambda: seed.read(PVCS.path(kube_ns, "context-logs")) is None)


def test_storage_class_assigned_by_the_cluster_is_reported(
        pool_client: TestClient[Any], kube_ns: str, kube_rest: Rest,
        kube_sim: DevSimulator) -> None:
    default = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
               "metadata": {"name": kube_ns, "annotations": {
                   "storageclass.kubernetes.io/is-default-class": "true"}},
               "provisioner": f"{kube_ns}.csi.test"}
    kube_rest.create(STORAGE_CLASSES.path(), default, "test")
    try:
        created = create(pool_client, kube_ns, "plain")
        assert "storageClass" not in created.json()["storage"]
        # the reconciler creates the claim after the answer: bind it once it exists
        eventually(lambda: kube_rest.find(PVCS.path(kube_ns, "context-plain")))
        kube_sim.settle()
        eventually(lambda: read(pool_client, kube_ns, "plain")["status"] == "ready")
        assert read(pool_client, kube_ns, "plain")["storage"]["storageClass"] == kube_ns
    finally:
        kube_rest.delete(STORAGE_CLASSES.path(None, kube_ns))


def test_wait_for_first_consumer_stays_provisioning_until_mounted(
        pool_client: TestClient[Any], kube_ns: str, kube_rest: Rest, seed: Seed,
        kube_sim: DevSimulator) -> None:
    lazy = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": f"{kube_ns}-lazy"}, "provisioner": f"{kube_ns}.csi.test",
            "volumeBindingMode": "WaitForFirstConsumer"}
    kube_rest.create(STORAGE_CLASSES.path(), lazy, "test")
    try:
        created = create(pool_client, kube_ns, "lazy", storageClass=f"{kube_ns}-lazy")
        assert created.status_code == 201
        eventually(lambda: seed.read(PVCS.path(kube_ns, "context-lazy")))
        kube_sim.settle()
        assert read(pool_client, kube_ns, "lazy")["status"] == "provisioning"
        seed.pod("first", "context-lazy")
        kube_sim.settle()
        eventually(lambda: read(pool_client, kube_ns, "lazy")["status"] == "ready")
    finally:
        kube_rest.delete(STORAGE_CLASSES.path(None, f"{kube_ns}-lazy"))


def test_an_existing_claim_name_is_taken(pool_client: TestClient[Any], kube_ns: str,
                                         seed: Seed) -> None:
    taken = {"error": "already_exists", "message": "context resource already exists"}
    seed.claim("context-theirs", labels={})
    assert create(pool_client, kube_ns, "theirs").json() == taken
    assert create(pool_client, kube_ns, "mine").status_code == 201
    eventually(lambda: seed.read(PVCS.path(kube_ns, "context-mine")))
    assert pool_client.delete(f"/v1/namespaces/{kube_ns}/contexts/mine",
                              headers=OWNER).status_code == 204
    eventually(lambda: seed.read(PVCS.path(kube_ns, "context-mine")) is None)
    assert create(pool_client, kube_ns, "mine").status_code == 201
    # validation still answers first
    bad = pool_client.post("/v1/contexts", json={"name": "theirs", "namespace": kube_ns},
                           headers=OWNER)
    assert bad.status_code == 400
