"""Sandbox pool provisioning: POST /v1/sandbox-pools until the pool reads ``ready``, against
creating the same PVCs and Sandboxes directly with the kubernetes client and waiting for their
Pods to be Ready, in the same run, on the same local control plane and development stand-in.

    python -m bench.bench_pools [--replicas 1,10,100] [--rounds 3]

The service runs as ``context-service serve`` (API, projections and reconciler in one process)
against a throwaway kube-apiserver. Each measurement starts from an empty namespace; both paths
poll every 20 ms. Goal: service / direct <= 1.5.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
from kubernetes import client as k8s

from bench.harness import postgres
from context_service.adapters.kubernetes import manifests
from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.rest import Rest
from context_service.devcluster.controlplane import ControlPlane
from context_service.devcluster.devsim import DevSimulator
from context_service.devcluster.local import ensure_binaries
from context_service.domain.cluster import POOL_LABEL, BuiltinRuntime, PoolSandbox, WorkspaceClaim
from tests.e2e.server import ServerProcess
from tests.support.kube import running_apiserver

IMAGE = "busybox:1.36"
POLL = 0.02
SERVICE_NS, DIRECT_NS = "bench-service", "bench-direct"


def wait_for(check: Callable[[], bool], timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(POLL)


def direct(api: k8s.ApiClient, ns: str, pool: str, replicas: int) -> float:
    """Create the pool's objects one by one with the official client, then wait for the Pods."""
    core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
    runtime = BuiltinRuntime(image=IMAGE)
    started = time.perf_counter()
    for i in range(replicas):
        claim = WorkspaceClaim(namespace=ns, pool=pool, index=i, replicas=replicas, size="1Gi",
                               access_mode="ReadWriteOnce")
        body: Any = manifests.workspace_claim(claim)  # the client takes plain JSON objects
        core.create_namespaced_persistent_volume_claim(ns, body)
    for i in range(replicas):
        sandbox = PoolSandbox(namespace=ns, pool=pool, index=i, replicas=replicas,
                              claim=f"{pool}-workspace-{i}", runtime=runtime)
        custom.create_namespaced_custom_object("agents.x-k8s.io", "v1beta1", ns, "sandboxes",
                                               manifests.sandbox(sandbox))

    def ready() -> bool:
        pods = core.list_namespaced_pod(ns, label_selector=f"{POOL_LABEL}={pool}").items
        conditions = [(p.status.conditions if p.status else None) or [] for p in pods]
        return sum(any(c.type == "Ready" and c.status == "True" for c in found)
                   for found in conditions) == replicas

    wait_for(ready)
    return time.perf_counter() - started


def service(http: httpx.Client, pool: str, replicas: int) -> float:
    body = {"name": pool, "replicas": replicas,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}
    started = time.perf_counter()
    response = http.post("/v1/sandbox-pools", json=body)
    if response.status_code != 201:
        raise RuntimeError(response.text)
    wait_for(lambda: http.get(f"/v1/sandbox-pools/{pool}").json()["status"] == "ready")
    return time.perf_counter() - started


def empty(cluster: KubernetesCluster, ns: str, pool: str) -> bool:
    objects = cluster.list_pool_objects(ns, pool)
    return not (objects.sandboxes or objects.claims or objects.pods)


def clean_direct(cluster: KubernetesCluster, ns: str, pool: str) -> None:
    objects = cluster.list_pool_objects(ns, pool)
    for sandbox in objects.sandboxes:
        cluster.delete_sandbox(ns, sandbox.name)
    for claim in objects.claims:
        cluster.delete_claim(ns, claim.name)
    wait_for(lambda: empty(cluster, ns, pool))


@contextlib.contextmanager
def served(plane: ControlPlane, url: str, data: Path) -> Iterator[ServerProcess]:
    (data / "srv").mkdir(exist_ok=True)
    server = ServerProcess(data / "srv", env={
        "CS_KUBE": "kubeconfig", "KUBECONFIG": str(plane.kubeconfig),
        "CS_NAMESPACE": SERVICE_NS, "CS_WORKERS": "projections,reconciler"})
    server.env["CS_DATABASE_URL"] = url
    server.start()
    try:
        yield server
    finally:
        server.stop()


def measure(api: k8s.ApiClient, cluster: KubernetesCluster, http: httpx.Client, n: int,
            rounds: int) -> tuple[float, float]:
    """Median seconds to ready of the direct path and of the service, for ``n`` replicas."""
    times: dict[str, list[float]] = {"direct": [], "service": []}
    for r in range(rounds):
        pool = f"p{n}-{r}"
        times["direct"].append(direct(api, DIRECT_NS, pool, n))
        clean_direct(cluster, DIRECT_NS, pool)
        times["service"].append(service(http, pool, n))
        http.delete(f"/v1/sandbox-pools/{pool}")
        wait_for(functools.partial(empty, cluster, SERVICE_NS, pool))
    return statistics.median(times["direct"]), statistics.median(times["service"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replicas", default="1,10,100")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    counts = [int(n) for n in args.replicas.split(",")]
    with postgres() as (url, data), running_apiserver(ensure_binaries(), data / "kube") as plane:
        api = plane.api_client()
        cluster = KubernetesCluster(Rest(api))
        sims = []
        for ns in (SERVICE_NS, DIRECT_NS):
            cluster.ensure_namespace(ns)
            sims.append(DevSimulator(cluster.rest, ns).start(interval=0.5))
        try:
            with served(plane, url, data) as server, server.client() as http:
                print(f"{'replicas':>8} {'direct s':>9} {'service s':>10} {'ratio':>6}")
                for n in counts:
                    d, s = measure(api, cluster, http, n, args.rounds)
                    print(f"{n:>8} {d:>9.3f} {s:>10.3f} {s / d:>6.2f}", flush=True)
        finally:
            for sim in sims:
                sim.stop()
            close(api)
    print("goal: service / direct <= 1.5")


if __name__ == "__main__":
    os.environ.setdefault("CS_LOG_FORMAT", "json")
    main()
