"""SIGKILL of ``serve`` while the reconciler's deletions hang in a paused kube-apiserver (SIGSTOP):
a released pool and a deleted context are recorded (the API answered 204), the requests that
delete their objects are sent or about to be, and the process dies. Started again on the same
database and apiserver, the service finishes the deletions: nothing of the released pool and no
PVC of the deleted context is left, the other context's PVC is untouched, and the views equal a
rebuild of the log.

The apiserver is this module's own: ``serve`` adopts labelled objects of the whole cluster at
start, and the session's server holds every other test's leftovers."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.devcluster.controlplane import ControlPlane
from tests.e2e.server import ServerProcess
from tests.faults.conftest import Rebuild, caught_up
from tests.faults.crash_cluster import cluster_in
from tests.support.pool_fixtures import eventually
from tests.support.views import differences, snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.k8s]
NS = "crash-kube"
SUBJECT = {"X-Context-Subject": "user:faults"}
POOLS = "/v1/sandbox-pools"
CONTEXTS = f"/v1/namespaces/{NS}/contexts"


@pytest.fixture
def cluster(plane: ControlPlane) -> Iterator[KubernetesCluster]:
    with cluster_in(plane, NS) as found:
        yield found


@pytest.fixture
def server(tmp_path: Path, plane: ControlPlane, cluster: KubernetesCluster,
           database_url: str) -> Iterator[ServerProcess]:
    (tmp_path / "serve").mkdir()
    proc = ServerProcess(tmp_path / "serve", env={
        "CS_KUBE": "kubeconfig", "KUBECONFIG": str(plane.kubeconfig), "CS_NAMESPACE": NS,
        "CS_WORKERS": "projections,query-index,reconciler"})
    proc.env["CS_DATABASE_URL"] = database_url
    yield proc
    proc.cleanup()


def _context(name: str) -> dict[str, object]:
    return {"name": name, "namespace": NS, "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}


def _claims(cluster: KubernetesCluster) -> dict[str, bool]:
    """The context PVCs of the namespace: name -> being deleted."""
    return {c.name: c.deleting for c in cluster.list_context_claims(NS)}


def _pool_left(cluster: KubernetesCluster, name: str) -> list[str]:
    objects = cluster.list_pool_objects(NS, name)
    return ([s.name for s in objects.sandboxes]
            + [c.name for c in objects.claims if not c.deleting])


def test_deletions_hung_in_the_apiserver_finish_after_a_restart(
        server: ServerProcess, plane: ControlPlane, cluster: KubernetesCluster,
        inspector: bootstrap.Container, rebuilt: Rebuild) -> None:
    server.start()
    with httpx.Client(base_url=server.url, headers=SUBJECT, timeout=30) as http:
        assert http.post(POOLS, json={"name": "gone", "replicas": 2, "workspace": {
            "size": "1Gi", "accessMode": "ReadWriteMany"}}).status_code == 201
        for name in ("doomed", "kept"):
            assert http.post("/v1/contexts", json=_context(name)).status_code == 201
        eventually(lambda: len(_pool_left(cluster, "gone")) == 3, timeout=30)
        eventually(lambda: set(_claims(cluster)) == {"context-doomed", "context-kept"},
                   timeout=30)

        apiserver = plane.procs["apiserver"].pid
        assert apiserver is not None
        os.kill(apiserver, signal.SIGSTOP)
        try:
            assert http.delete(f"{POOLS}/gone").status_code == 204
            assert http.delete(f"{CONTEXTS}/doomed").status_code == 204
            time.sleep(0.5)  # the reconciler's deletions are sent into the paused server
            server.kill()
        finally:
            os.kill(apiserver, signal.SIGCONT)

    server.start()
    eventually(lambda: _pool_left(cluster, "gone") == [], timeout=30)
    eventually(lambda: _claims(cluster).get("context-doomed", True), timeout=30)
    assert _claims(cluster).get("context-kept") is False
    with httpx.Client(base_url=server.url, headers=SUBJECT, timeout=30) as http:
        assert http.get(f"{POOLS}/gone").status_code == 404
        assert http.get(f"{CONTEXTS}/doomed").status_code == 404
        kept = http.get(f"{CONTEXTS}/kept")
        assert kept.status_code == 200 and kept.json()["status"] != "deleting"
    caught_up(inspector)
    assert differences(snapshot(inspector), rebuilt(inspector)) == {}
