"""The kube-apiserver goes away and comes back while pools and contexts keep being asked for
and released: the reconciler backs off, then converges on exactly what the log asks for, with
no duplicate object (one Sandbox per replica, one PVC per context, nothing left of a released
pool)."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.reconciler import Reconciler
from context_service.adapters.kubernetes.rest import Rest
from context_service.config import Settings
from context_service.devcluster.controlplane import ControlPlane
from context_service.domain.cluster import BuiltinRuntime
from context_service.domain.context.commands import CreateContext
from context_service.domain.events import Subject
from context_service.domain.pool.commands import ReleasePool, RequestPool
from tests.support.pool_fixtures import IMAGE, eventually

pytestmark = [pytest.mark.k8s, pytest.mark.postgres, pytest.mark.slow]
NS = "faults"
OWNER = Subject("user", "owner")


@pytest.fixture
def cluster(plane: ControlPlane) -> Iterator[KubernetesCluster]:
    api = plane.api_client()
    found = KubernetesCluster(Rest(api, timeout=1.0))
    found.ensure_namespace(NS)
    yield found
    close(api)


def pool(name: str, replicas: int) -> RequestPool:
    return RequestPool(name=name, replicas=replicas, namespace=NS, size="1Gi",
                       access_mode="ReadWriteOnce", runtime=BuiltinRuntime(image=IMAGE))


def context(name: str) -> CreateContext:
    return CreateContext(actor=OWNER, name=name, namespace=NS, type="memory", backend="pvc",
                         size="1Gi", access_mode="ReadWriteOnce")


def test_reconciler_converges_after_an_apiserver_restart(
        plane: ControlPlane, cluster: KubernetesCluster, tmp_path: pathlib.Path,
        database_url: str) -> None:
    settings = Settings(data_dir=tmp_path, sandbox_image=IMAGE, kube_mode="off", namespace=NS)
    container = bootstrap.build(settings, url=database_url, pool_size=4)
    container.cluster = cluster
    rec = Reconciler(cluster, container.store, container.contexts, container.pools,
                     namespace=NS, backoff=(0.2, 1.0), resync_seconds=1.0).start()
    try:
        for i in range(3):
            container.pools.execute(pool(f"before-{i}", 2))
            container.contexts.execute(NS, f"ctx-before-{i}", context(f"ctx-before-{i}"))
        eventually(lambda: len(cluster.list_pool_objects(NS).sandboxes) == 6, timeout=30)

        plane.stop(grace=0.5)  # a crash as much as a restart
        for i in range(3):
            container.pools.execute(pool(f"during-{i}", 3))
            container.contexts.execute(NS, f"ctx-during-{i}", context(f"ctx-during-{i}"))
        container.pools.execute(ReleasePool(name="before-0"))
        eventually(lambda: rec.stats["errors"] >= 2, timeout=20)

        plane.start()
        container.pools.execute(pool("after", 1))
        wanted = {f"before-{i}": 2 for i in (1, 2)} | {f"during-{i}": 3 for i in range(3)}
        wanted["after"] = 1

        def converged() -> bool:
            objects = cluster.list_pool_objects(NS)
            names = [s.name for s in objects.sandboxes]
            expected = sorted(f"sandbox-{p}-{i}" for p, n in wanted.items() for i in range(n))
            return sorted(names) == expected

        eventually(converged, timeout=60, interval=0.5)
        claims = [c.name for c in cluster.list_context_claims(NS)]
        assert sorted(claims) == sorted(
            f"context-ctx-{when}-{i}" for when in ("before", "during") for i in range(3))
        assert len(claims) == len(set(claims))
    finally:
        rec.stop()
        container.close()
