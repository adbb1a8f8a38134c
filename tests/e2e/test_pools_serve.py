"""Sandbox pools through ``context-service serve`` as a process, pointed at a kube-apiserver of
this module with the development stand-in running: a pool becomes ready and is released, and a
killed service, restarted, finishes what it was doing without duplicating anything.

The server is this module's own: ``serve`` adopts labelled objects of the whole cluster at start,
and the session server holds every other test's leftovers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.rest import Rest
from context_service.devcluster.controlplane import ControlPlane
from context_service.devcluster.devsim import DevSimulator
from tests.e2e.server import ServerProcess
from tests.support.kube import running_apiserver
from tests.support.pool_fixtures import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.k8s]
POOLS = "/v1/sandbox-pools"


@pytest.fixture(scope="module")
def plane(kube_bin_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    with running_apiserver(kube_bin_dir, tmp_path_factory.mktemp("kube-e2e")) as started:
        yield started


@pytest.fixture(scope="module")
def cluster(plane: ControlPlane) -> Iterator[KubernetesCluster]:
    api = plane.api_client()
    yield KubernetesCluster(Rest(api))
    close(api)


@pytest.fixture
def namespace(cluster: KubernetesCluster, request: pytest.FixtureRequest) -> str:
    name: str = request.node.name.replace("_", "-")[-40:].strip("-")
    cluster.ensure_namespace(name)
    return name


@pytest.fixture
def server(data_dir: Path, plane: ControlPlane, namespace: str,
           database_url: str) -> Iterator[ServerProcess]:
    proc = ServerProcess(data_dir, env={
        "CS_KUBE": "kubeconfig", "KUBECONFIG": str(plane.kubeconfig),
        "CS_NAMESPACE": namespace, "CS_WORKERS": "projections,reconciler"})
    proc.env["CS_DATABASE_URL"] = database_url  # the suite's PostgreSQL, a database of its own
    yield proc
    proc.cleanup()


@pytest.fixture
def simulator(cluster: KubernetesCluster, namespace: str) -> Iterator[DevSimulator]:
    sim = DevSimulator(cluster.rest, namespace).start(interval=0.5)
    yield sim
    sim.stop()


def pool(http: httpx.Client, name: str) -> dict[str, Any]:
    found: dict[str, Any] = http.get(f"{POOLS}/{name}").json()
    return found


def sandboxes(cluster: KubernetesCluster, ns: str, name: str) -> list[str]:
    return [s.name for s in cluster.list_pool_objects(ns, name).sandboxes]


def test_pool_becomes_ready_and_is_released(server: ServerProcess, simulator: DevSimulator,
                                            cluster: KubernetesCluster,
                                            namespace: str) -> None:
    server.start()
    with server.client() as http:
        body = {"name": "docs", "replicas": 2,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}
        assert http.post(POOLS, json=body).status_code == 201
        ready = eventually(lambda: pool(http, "docs")["status"] == "ready", timeout=30)
        assert ready
        assert pool(http, "docs")["readyReplicas"] == 2
        assert http.delete(f"{POOLS}/docs").status_code == 204
    eventually(lambda: cluster.list_pool_objects(namespace, "docs").claims == (), timeout=30)
    assert sandboxes(cluster, namespace, "docs") == []
    assert server.stop() == 0


def test_killed_service_finishes_after_restart(server: ServerProcess, simulator: DevSimulator,
                                               cluster: KubernetesCluster,
                                               namespace: str) -> None:
    server.start()
    with server.client() as http:
        body = {"name": "big", "replicas": 6,
                "workspace": {"size": "1Gi", "accessMode": "ReadWriteMany"}}
        assert http.post(POOLS, json=body).status_code == 201
        eventually(lambda: sandboxes(cluster, namespace, "big"), timeout=30, interval=0.01)
    server.kill()  # possibly in the middle of creating the pool's objects
    cluster.delete_claim(namespace, "big-workspace")  # and someone removes the workspace

    server.start()
    with server.client() as http:
        eventually(lambda: pool(http, "big")["status"] == "ready", timeout=30)
        assert pool(http, "big")["readyReplicas"] == 6
    assert sandboxes(cluster, namespace, "big") == [f"sandbox-big-{i}" for i in range(6)]
    assert [c.name for c in cluster.list_pool_objects(namespace, "big").claims] == [
        "big-workspace"]
    assert server.stop() == 0
