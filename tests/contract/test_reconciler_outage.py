"""The reconciler survives an API-server restart: while the server is down the pool it was asked
for stays ``provisioning`` and the reconciler backs off; once the server is back it creates what
was asked meanwhile, releases what was released, and reports the pools ready (a throwaway
server, so marked slow)."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.client import close, from_kubeconfig
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.reconciler import Reconciler
from context_service.adapters.kubernetes.rest import Rest
from context_service.config import Settings
from context_service.devcluster.controlplane import ControlPlane
from context_service.devcluster.devsim import DevSimulator
from context_service.domain.cluster import BuiltinRuntime
from context_service.domain.pool.commands import ReleasePool, RequestPool
from tests.support.kube import running_apiserver
from tests.support.pool_fixtures import IMAGE, eventually

pytestmark = [pytest.mark.k8s, pytest.mark.postgres, pytest.mark.slow]
NS = "outage"


@pytest.fixture
def plane(kube_bin_dir: pathlib.Path, tmp_path: pathlib.Path) -> Iterator[ControlPlane]:
    with running_apiserver(kube_bin_dir, tmp_path / "kube") as started:
        yield started


@pytest.fixture
def cluster(plane: ControlPlane) -> Iterator[KubernetesCluster]:
    """The service's own client (its retries never sleep a 503's Retry-After, which a
    restarted apiserver sends while it serves its CRDs again): the reconciler's own backoff,
    this test's subject, is what retries then."""
    api = from_kubeconfig(plane.kubeconfig)
    found = KubernetesCluster(Rest(api, timeout=1.0))
    found.ensure_namespace(NS)
    yield found
    close(api)


def request(name: str) -> RequestPool:
    return RequestPool(name=name, replicas=2, namespace=NS, size="1Gi",
                       access_mode="ReadWriteOnce", runtime=BuiltinRuntime(image=IMAGE))


def test_api_server_restart(plane: ControlPlane, cluster: KubernetesCluster, tmp_path: pathlib.Path,
                            database_url: str) -> None:
    settings = Settings(data_dir=tmp_path, sandbox_image=IMAGE, kube_mode="off", namespace=NS)
    container = bootstrap.build(settings, url=database_url, pool_size=4)
    container.cluster = cluster
    sim = DevSimulator(cluster.rest, NS)
    rec = Reconciler(cluster, container.store, container.contexts, container.pools,
                     namespace=NS, backoff=(0.2, 1.0), resync_seconds=2.0).start()
    try:
        container.pools.execute(request("before"))

        def ready(name: str) -> bool:
            sim.run_once()
            return container.pools.load(name)[1].status == "ready"

        eventually(lambda: ready("before"), timeout=20, interval=0.1)

        plane.stop(grace=0.5)  # a crash as much as a restart
        container.pools.execute(request("during"))
        container.pools.execute(ReleasePool(name="before"))
        eventually(lambda: rec.stats["errors"] >= 2, timeout=20)
        assert container.pools.load("during")[1].status == "provisioning"

        plane.start()
        eventually(lambda: ready("during"), timeout=30, interval=0.2)
        eventually(lambda: cluster.list_pool_objects(NS, "before").sandboxes == ())
        assert [s.name for s in cluster.list_pool_objects(NS, "during").sandboxes] == [
            "sandbox-during-0", "sandbox-during-1"]
    finally:
        rec.stop()
        container.close()
