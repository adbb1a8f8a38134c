"""Pools end to end through HTTP with the in-process reconciler and the development stand-in:
status derivation (spec 6.8), release per strategy (spec 6.9), drift repair, and a reconciler
restart that picks up what happened while it was down."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.reconciler import reconciler_for
from context_service.devcluster.devsim import DevSimulator
from tests.support.pool_fixtures import Seed, eventually, reconciler_of

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
POOLS = "/v1/sandbox-pools"


def until_ready(client: TestClient[Any], sim: DevSimulator, name: str,
                timeout: float = 20.0) -> dict[str, Any]:
    """Let the cluster catch up until the pool reads ``ready`` with every resource Ready,
    Running or Bound (resource statuses are snapshots that may trail ``readyReplicas``)."""
    settled = {"Ready", "Running", "Bound"}

    def ready() -> dict[str, Any] | None:
        sim.run_once()
        pool: dict[str, Any] = client.get(f"{POOLS}/{name}").json()
        done = pool["status"] == "ready" and all(
            r["status"] in settled for r in pool.get("resources", []))
        return pool if done else None

    return eventually(ready, timeout=timeout, interval=0.1)


def pool_names(cluster: KubernetesCluster, ns: str, pool: str) -> list[str]:
    objects = cluster.list_pool_objects(ns, pool)
    return sorted(o.name for group in (objects.sandboxes, objects.sandbox_claims, objects.claims)
                  for o in group)


def test_status_follows_the_observed_objects(pool_client: TestClient[Any],
                                             kube_sim: DevSimulator) -> None:
    body = {"name": "docs", "replicas": 2, "workspace": {"size": "2Gi",
                                                          "accessMode": "ReadWriteMany"}}
    assert pool_client.post(POOLS, json=body).status_code == 201
    pool = until_ready(pool_client, kube_sim, "docs")
    assert pool == {
        "name": "docs", "status": "ready", "replicas": 2, "readyReplicas": 2,
        "sandboxSelector": "context.rossoctl.io/pool=docs",
        "workspace": {"size": "2Gi", "accessMode": "ReadWriteMany"},
        "resources": [
            {"kind": "sandbox", "name": "sandbox-docs-0", "status": "Ready"},
            {"kind": "sandbox", "name": "sandbox-docs-1", "status": "Ready"},
            {"kind": "pod", "name": "sandbox-docs-0", "status": "Running"},
            {"kind": "pod", "name": "sandbox-docs-1", "status": "Running"},
            {"kind": "pvc", "name": "docs-workspace", "status": "Bound"}]}
    listed = pool_client.get(POOLS)
    assert listed.json() == {"items": [pool]}
    assert listed.text.startswith('{"items":[{"name":"docs","status":"ready","replicas":2,'
                                  '"readyReplicas":2,"sandboxSelector"')


def test_provisioning_shows_reasons_until_pods_run(
        pool_client: TestClient[Any], kube_cluster: KubernetesCluster, kube_ns: str,
        kube_sim: DevSimulator) -> None:
    body = {"name": "slow", "replicas": 1, "workspace": {"size": "1Gi",
                                                          "accessMode": "ReadWriteOnce"}}
    assert pool_client.post(POOLS, json=body).status_code == 201
    eventually(lambda: pool_names(kube_cluster, kube_ns, "slow") == [
        "sandbox-slow-0", "slow-workspace-0"])
    kube_sim.sandboxes_pass()  # the Pod exists, but its claim is not bound yet

    def observed() -> dict[str, Any]:
        pool: dict[str, Any] = pool_client.get(f"{POOLS}/slow").json()
        assert pool.get("resources") == [
            {"kind": "sandbox", "name": "sandbox-slow-0", "status": "DependenciesNotReady"},
            {"kind": "pod", "name": "sandbox-slow-0", "status": "Pending"},
            {"kind": "pvc", "name": "slow-workspace-0", "status": "Pending"}]
        return pool

    pool = eventually(observed)
    assert (pool["status"], pool["readyReplicas"]) == ("provisioning", 0)
    assert until_ready(pool_client, kube_sim, "slow")["readyReplicas"] == 1


def test_existing_claim_and_warm_pool_status(pool_client: TestClient[Any], seed: Seed,
                                             kube_sim: DevSimulator) -> None:
    seed.template("dev")
    seed.warm_pool("w", "dev")
    seed.claim("team-data", size="2Gi")
    bodies = [{"name": "ext", "replicas": 2, "workspace": {"claimName": "team-data",
                                                           "readOnly": False}},
              {"name": "agents", "replicas": 2, "warmPoolRef": "w"}]
    for body in bodies:
        assert pool_client.post(POOLS, json=body).status_code == 201
    ext = until_ready(pool_client, kube_sim, "ext")
    assert ext["workspace"] == {"size": "2Gi", "accessMode": "ReadWriteMany",
                                "claimName": "team-data", "readOnly": False}
    assert {"kind": "pvc", "name": "team-data", "status": "Bound"} in ext["resources"]
    agents = until_ready(pool_client, kube_sim, "agents")
    assert [(r["kind"], r["name"], r["status"]) for r in agents["resources"]] == [
        ("sandboxclaim", "claim-agents-0", "Ready"), ("sandboxclaim", "claim-agents-1", "Ready"),
        ("pod", "claim-agents-0", "Running"), ("pod", "claim-agents-1", "Running")]
    assert agents["warmPoolRef"] == "w"


def test_release_follows_each_strategy(
        pool_client: TestClient[Any], seed: Seed, kube_cluster: KubernetesCluster, kube_ns: str,
        kube_sim: DevSimulator) -> None:
    seed.template("dev")
    seed.warm_pool("w", "dev")
    seed.claim("team-data")
    bodies = {
        "ded": {"replicas": 2, "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}},
        "sha": {"replicas": 2, "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"}},
        "ext": {"replicas": 1, "workspace": {"claimName": "team-data", "readOnly": True}},
        "wrm": {"replicas": 2, "warmPoolRef": "w"}}
    for name, body in bodies.items():
        assert pool_client.post(POOLS, json={"name": name, **body}).status_code == 201
    for name in bodies:
        until_ready(pool_client, kube_sim, name)
    for name in bodies:
        assert pool_client.delete(f"{POOLS}/{name}").status_code == 204
        assert pool_client.get(f"{POOLS}/{name}").json() == {
            "error": "not_found", "message": "sandbox pool not found"}
        assert pool_client.delete(f"{POOLS}/{name}").status_code == 404
    assert pool_client.get(POOLS).json() == {"items": []}

    def gone() -> bool:
        kube_sim.run_once()
        return all(pool_names(kube_cluster, kube_ns, n) == [] for n in bodies)

    eventually(gone, timeout=20)
    assert kube_cluster.get_claim(kube_ns, "team-data") is not None
    assert kube_cluster.get_warm_pool(kube_ns, "w") is not None
    assert kube_cluster.get_sandbox_template(kube_ns, "dev") is not None
    assert kube_cluster.list_pool_objects(kube_ns, "wrm").pods == ()


def test_drift_is_repaired(pool_client: TestClient[Any], kube_cluster: KubernetesCluster,
                           kube_ns: str, kube_sim: DevSimulator) -> None:
    body = {"name": "docs", "replicas": 2, "workspace": {"size": "1Gi",
                                                          "accessMode": "ReadWriteOnce"}}
    assert pool_client.post(POOLS, json=body).status_code == 201
    until_ready(pool_client, kube_sim, "docs")
    kube_cluster.delete_sandbox(kube_ns, "sandbox-docs-0")
    kube_cluster.delete_claim(kube_ns, "docs-workspace-1")
    kube_sim.settle()  # the garbage collector removes the deleted Sandbox's Pod
    eventually(lambda: pool_names(kube_cluster, kube_ns, "docs") == [
        "docs-workspace-0", "docs-workspace-1", "sandbox-docs-0", "sandbox-docs-1"])
    pool = until_ready(pool_client, kube_sim, "docs")
    assert pool["readyReplicas"] == 2


def test_reconciler_restart_catches_up(
        pool_container: bootstrap.Container, pool_client: TestClient[Any],
        kube_cluster: KubernetesCluster, kube_ns: str, kube_sim: DevSimulator) -> None:
    ws = {"size": "1Gi", "accessMode": "ReadWriteOnce"}
    assert pool_client.post(POOLS, json={"name": "old", "replicas": 1,
                                         "workspace": ws}).status_code == 201
    until_ready(pool_client, kube_sim, "old")
    first = reconciler_of(pool_container)
    first.stop()
    pool_container.started.remove(first)
    assert pool_client.post(POOLS, json={"name": "new", "replicas": 2,
                                         "workspace": ws}).status_code == 201
    assert pool_client.delete(f"{POOLS}/old").status_code == 204
    kube_cluster.delete_claim(kube_ns, "old-workspace-0")  # drift while nobody watches
    assert pool_names(kube_cluster, kube_ns, "new") == []

    pool_container.started.append(reconciler_for(pool_container).start())
    eventually(lambda: pool_names(kube_cluster, kube_ns, "old") == [])
    assert until_ready(pool_client, kube_sim, "new")["readyReplicas"] == 2
    assert pool_names(kube_cluster, kube_ns, "new") == [
        "new-workspace-0", "new-workspace-1", "sandbox-new-0", "sandbox-new-1"]
