"""Reconciler resync over many pools with nothing to change: its duration and every API call it
made (goal: no writes at all, to Kubernetes or to the event log).

    python -m bench.bench_resync [--pools 1000] [--rounds 3]

The pools (a quarter of each strategy, one replica each, every existing-claim pool with its
own claim) are recorded, converged with the development stand-in making everything ready, and
then resynced on a throwaway kube-apiserver.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import Counter
from typing import Any

from bench.harness import postgres
from context_service import bootstrap
from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import (
    SANDBOX_TEMPLATE,
    WARM_POOL,
    KubernetesCluster,
)
from context_service.adapters.kubernetes.reconciler import Reconciler
from context_service.adapters.kubernetes.rest import PVCS, Rest
from context_service.config import Settings
from context_service.devcluster.devsim import DevSimulator
from context_service.devcluster.local import ensure_binaries
from context_service.domain.cluster import BuiltinRuntime
from context_service.domain.pool.commands import RequestPool
from context_service.domain.pool.events import Workspace
from tests.support.kube import running_apiserver

NS = "bench-resync"
IMAGE = "busybox:1.36"


class CountingRest(Rest):
    """The JSON layer, counting requests by method and resource."""

    def __init__(self, rest: Rest) -> None:
        super().__init__(rest.api, rest.timeout)
        self.calls: Counter[str] = Counter()

    def request(self, method: str, path: str, **kw: Any) -> Any:
        resource = path.split("?")[0].rstrip("/").split("/namespaces/")[-1].split("/")
        self.calls[f"{method} {resource[1] if len(resource) > 1 else path}"] += 1
        return super().request(method, path, **kw)


def seed(rest: Rest) -> None:
    rest.create(SANDBOX_TEMPLATE.path(NS), {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxTemplate",
        "metadata": {"name": "dev"}, "spec": {"podTemplate": {"spec": {"containers": [
            {"name": "c", "image": IMAGE}]}}}}, "bench")
    rest.create(WARM_POOL.path(NS), {
        "apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
        "metadata": {"name": "warm"}, "spec": {"replicas": 1,
                                               "sandboxTemplateRef": {"name": "dev"}}}, "bench")



def seed_claim(rest: Rest, name: str) -> None:
    """The caller's own PVC of an existing-claim pool."""
    rest.create(PVCS.path(NS), {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteMany"],
                 "resources": {"requests": {"storage": "1Gi"}}}}, "bench")


def request(i: int) -> RequestPool:
    name, kind = f"pool-{i:04d}", i % 4
    if kind == 3:
        return RequestPool(name=name, replicas=1, namespace=NS, warm_pool_ref="warm")
    runtime = BuiltinRuntime(image=IMAGE)
    if kind == 2:
        claim = Workspace(size="1Gi", access_mode="ReadWriteMany", claim_name=f"data-{i:04d}",
                          read_only=True)
        return RequestPool(name=name, replicas=1, namespace=NS, claim_name=claim.claim_name,
                           read_only=True, claim=claim, runtime=runtime)
    mode = "ReadWriteOnce" if kind == 0 else "ReadWriteMany"
    return RequestPool(name=name, replicas=1, namespace=NS, size="1Gi", access_mode=mode,
                       runtime=runtime)


def converge(rec: Reconciler, sim: DevSimulator) -> None:
    while True:
        results = rec.sync()
        sim.settle(2)
        if all(not r.planned and not r.recorded and not r.errors for r in results):
            return


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pools", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with postgres() as (url, data), running_apiserver(ensure_binaries(), data / "kube") as plane:
        api = plane.api_client()
        counting = CountingRest(Rest(api, timeout=120.0))
        cluster = KubernetesCluster(counting)
        cluster.ensure_namespace(NS)
        seed(counting)
        settings = Settings(data_dir=data, sandbox_image=IMAGE, kube_mode="off", namespace=NS)
        container = bootstrap.build(settings, url=url, pool_size=4)
        try:
            for i in range(args.pools):
                pool = request(i)
                if pool.claim_name:
                    seed_claim(counting, pool.claim_name)
                container.pools.execute(pool)
            rec = Reconciler(cluster, container.store, container.contexts, container.pools,
                             namespace=NS)
            started = time.perf_counter()
            converge(rec, DevSimulator(Rest(api, timeout=120.0), NS))
            print(f"{args.pools} pools converged in {time.perf_counter() - started:.1f}s")
            durations, calls = [], Counter[str]()
            for _ in range(args.rounds):
                counting.calls.clear()
                head = container.store.head()
                started = time.perf_counter()
                [result] = rec.sync()
                durations.append(time.perf_counter() - started)
                assert not result.errors, result.errors
                appended = container.store.head() - head
                calls = Counter(counting.calls)
                writes = sum(n for call, n in calls.items() if not call.startswith("GET"))
                print(f"resync {durations[-1]:.3f}s: {sum(calls.values())} API calls, "
                      f"{writes} writes, {appended} events appended, {result.planned} actions")
            print(f"median {statistics.median(durations):.3f}s; calls of the last resync:")
            for call, n in sorted(calls.items()):
                print(f"  {n:>5}  {call}")
        finally:
            container.close()
            close(api)
    print("goal: no writes at all")


if __name__ == "__main__":
    main()
