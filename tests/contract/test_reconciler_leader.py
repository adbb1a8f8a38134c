"""Reconciler leadership on PostgreSQL advisory locks, and failures answered by the API server:
one instance is active at a time, a standby takes over when the holder dies or loses its
database session, and 409/404/5xx answers are retried until the cluster converges."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.reconciler import LOCK_NAME, Reconciler, ReconcilerLock
from context_service.domain.cluster import BuiltinRuntime, ClusterError
from context_service.domain.pool.commands import RequestPool
from tests.support.pool_fixtures import IMAGE, eventually, manual_reconciler

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]


def request(ns: str, name: str, replicas: int = 1) -> RequestPool:
    return RequestPool(name=name, replicas=replicas, namespace=ns, size="1Gi",
                       access_mode="ReadWriteOnce", runtime=BuiltinRuntime(image=IMAGE))


def sandboxes(cluster: KubernetesCluster, ns: str, pool: str) -> list[str]:
    return [s.name for s in cluster.list_pool_objects(ns, pool).sandboxes]


@pytest.fixture
def instances(kube_container: bootstrap.Container) -> Iterator[Callable[[], Reconciler]]:
    made: list[Reconciler] = []

    def start() -> Reconciler:
        rec = manual_reconciler(kube_container, lock=ReconcilerLock(kube_container.url, LOCK_NAME),
                                standby_seconds=0.1)
        made.append(rec.start())
        return rec

    yield start
    for rec in made:
        rec.stop()


def test_one_active_instance_and_takeover_when_it_dies(
        kube_container: bootstrap.Container, instances: Callable[[], Reconciler],
        kube_cluster: KubernetesCluster, kube_ns: str) -> None:
    first = instances()
    eventually(first.active.is_set)
    second = instances()
    time.sleep(0.5)
    assert not second.active.is_set()
    kube_container.pools.execute(request(kube_ns, "a"))
    eventually(lambda: sandboxes(kube_cluster, kube_ns, "a") == ["sandbox-a-0"])
    assert second.stats["passes"] == 0

    # the first process dies: its threads stop and, with it, its database session
    lock = first.lock
    assert isinstance(lock, ReconcilerLock)
    session = lock._conn
    assert session is not None
    lock.release = lambda: None  # type: ignore[method-assign]  # a dead process releases nothing
    first.stop()
    time.sleep(0.5)
    assert not second.active.is_set()  # the lock outlives the threads until the session ends
    session.close()
    eventually(second.active.is_set)
    kube_container.pools.execute(request(kube_ns, "b"))
    eventually(lambda: sandboxes(kube_cluster, kube_ns, "b") == ["sandbox-b-0"])


def test_an_instance_whose_session_is_killed_stands_down(
        kube_container: bootstrap.Container, instances: Callable[[], Reconciler],
        database_url: str, kube_cluster: KubernetesCluster, kube_ns: str) -> None:
    first = instances()
    eventually(first.active.is_set)
    second = instances()
    lock = first.lock
    assert isinstance(lock, ReconcilerLock) and lock._conn is not None
    pid = lock._conn.info.backend_pid
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    # the holder notices at its next step; then one of the two holds the lock again
    eventually(lambda: lock._conn is None or lock._conn.info.backend_pid != pid)
    eventually(lambda: first.active.is_set() or second.active.is_set())
    for _ in range(10):  # never two at once
        assert first.active.is_set() + second.active.is_set() == 1
        time.sleep(0.05)
    kube_container.pools.execute(request(kube_ns, "c"))
    eventually(lambda: sandboxes(kube_cluster, kube_ns, "c") == ["sandbox-c-0"])


class Flaky:
    """The cluster port, failing chosen calls a number of times first."""

    def __init__(self, cluster: KubernetesCluster) -> None:
        self.cluster = cluster
        self.failures: dict[str, list[ClusterError]] = {}

    def fail(self, method: str, error: ClusterError, times: int = 1) -> None:
        self.failures.setdefault(method, []).extend([error] * times)

    def __getattr__(self, method: str) -> Any:
        real = getattr(self.cluster, method)

        def call(*args: Any, **kwargs: Any) -> Any:
            pending = self.failures.get(method)
            if pending:
                raise pending.pop(0)
            return real(*args, **kwargs)

        return call


def test_api_server_errors_are_retried_until_converged(
        kube_container: bootstrap.Container, kube_cluster: KubernetesCluster,
        kube_ns: str) -> None:
    flaky = Flaky(kube_cluster)
    rec = manual_reconciler(kube_container)
    rec.cluster = rec.passes.cluster = flaky  # type: ignore[assignment]
    kube_container.pools.execute(request(kube_ns, "p", replicas=2))
    flaky.fail("list_pool_objects", ClusterError(503, "Unavailable", "connection refused"))
    flaky.fail("ensure_workspace_claim", ClusterError(409, "Conflict", "try again"))
    flaky.fail("ensure_sandbox", ClusterError(500, "InternalError", "etcd timeout"), times=2)
    flaky.fail("ensure_sandbox", ClusterError(404, "NotFound", "namespaces not found"))
    outcomes = []
    for _ in range(6):
        [result] = rec.sync()
        outcomes.append((result.changed, len(result.errors)))
        if not result.errors and not result.planned:
            break
    assert outcomes[0] == (0, 1)  # the observation failed: nothing done
    assert outcomes[1] == (1, 1)  # one PVC made, the other answered 409: sandboxes wait
    assert outcomes[-1] == (0, 0)
    assert sandboxes(kube_cluster, kube_ns, "p") == ["sandbox-p-0", "sandbox-p-1"]
    assert rec.stats["errors"] == 5
