"""Sandbox pools through ``context-service serve`` as a process, pointed at the session
kube-apiserver with the development stand-in running: a pool becomes ready and is released, and
a killed service, restarted, finishes what it was doing without duplicating anything."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from src.adapters.kubernetes.cluster import KubernetesCluster
from src.adapters.kubernetes.controlplane import ControlPlane
from src.adapters.kubernetes.devsim import DevSimulator
from src.adapters.kubernetes.rest import Rest
from tests.e2e.server import ServerProcess
from tests.support.pool_fixtures import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.k8s]
POOLS = "/v1/sandbox-pools"


@pytest.fixture
def server(data_dir: Path, kube_server: ControlPlane, kube_ns: str) -> Iterator[ServerProcess]:
    proc = ServerProcess(data_dir, env={
        "CS_KUBE": "kubeconfig", "KUBECONFIG": str(kube_server.kubeconfig),
        "CS_NAMESPACE": kube_ns, "CS_WORKERS": "projections,reconciler"})
    yield proc
    proc.cleanup()


@pytest.fixture
def simulator(kube_rest: Rest, kube_ns: str) -> Iterator[DevSimulator]:
    sim = DevSimulator(kube_rest, kube_ns).start(interval=0.5)
    yield sim
    sim.stop()


def pool(http: httpx.Client, name: str) -> dict[str, Any]:
    found: dict[str, Any] = http.get(f"{POOLS}/{name}").json()
    return found


def sandboxes(cluster: KubernetesCluster, ns: str, name: str) -> list[str]:
    return [s.name for s in cluster.list_pool_objects(ns, name).sandboxes]


def test_pool_becomes_ready_and_is_released(server: ServerProcess, simulator: DevSimulator,
                                            kube_cluster: KubernetesCluster,
                                            kube_ns: str) -> None:
    server.start()
    with server.client() as http:
        body = {"name": "docs", "replicas": 2,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}
        assert http.post(POOLS, json=body).status_code == 201
        ready = eventually(lambda: pool(http, "docs")["status"] == "ready", timeout=30)
        assert ready
        assert pool(http, "docs")["readyReplicas"] == 2
        assert http.delete(f"{POOLS}/docs").status_code == 204
    eventually(lambda: kube_cluster.list_pool_objects(kube_ns, "docs").claims == (), timeout=30)
    assert sandboxes(kube_cluster, kube_ns, "docs") == []
    assert server.stop() == 0


def test_killed_service_finishes_after_restart(server: ServerProcess, simulator: DevSimulator,
                                               kube_cluster: KubernetesCluster,
                                               kube_ns: str) -> None:
    server.start()
    with server.client() as http:
        body = {"name": "big", "replicas": 6,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"}}
        assert http.post(POOLS, json=body).status_code == 201
        eventually(lambda: sandboxes(kube_cluster, kube_ns, "big"), timeout=30, interval=0.01)
    server.kill()  # possibly in the middle of creating the pool's objects
    kube_cluster.delete_claim(kube_ns, "big-workspace")  # and someone removes the workspace

    server.start()
    with server.client() as http:
        eventually(lambda: pool(http, "big")["status"] == "ready", timeout=30)
        assert pool(http, "big")["readyReplicas"] == 6
    assert sandboxes(kube_cluster, kube_ns, "big") == [f"sandbox-big-{i}" for i in range(6)]
    assert [c.name for c in kube_cluster.list_pool_objects(kube_ns, "big").claims] == [
        "big-workspace"]
    assert server.stop() == 0
