"""The local development control plane: start, seeded cluster, stand-in loop, restart."""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable

import pytest

from context_service.adapters.kubernetes import client
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.rest import Rest
from context_service.config import Settings
from context_service.devcluster.controlplane import Ports
from context_service.devcluster.local import (
    DEV_DRIVER,
    DEV_SNAPSHOT_CLASS,
    DEV_STORAGE_CLASS,
    DEV_TEMPLATE,
    DEV_WARM_POOL,
    LocalControlPlane,
)
from context_service.domain.cluster import BuiltinRuntime, ContextClaim, PoolSandbox

pytestmark = [pytest.mark.k8s, pytest.mark.slow]


def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


def test_local_control_plane_runs_seeds_simulates_and_restarts(
    kube_bin_dir: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    settings = Settings(data_dir=tmp_path, namespace="harness", kube_mode="local")
    plane = LocalControlPlane(
        tmp_path / "kube", "harness", bin_dir=kube_bin_dir, preferred_ports=Ports.pick()
    )
    with plane:
        assert plane.kubeconfig == client.local_kubeconfig(settings)
        api = client.api_client(settings)
        try:
            cluster = KubernetesCluster(Rest(api))
            [storage] = cluster.list_storage_classes()
            assert (storage.name, storage.default, storage.provisioner) == (
                DEV_STORAGE_CLASS,
                True,
                DEV_DRIVER,
            )
            [snapshots] = cluster.list_snapshot_classes()
            assert (snapshots.name, snapshots.default, snapshots.driver) == (
                DEV_SNAPSHOT_CLASS,
                True,
                DEV_DRIVER,
            )
            assert cluster.get_sandbox_template("harness", DEV_TEMPLATE) is not None
            assert cluster.get_warm_pool("harness", DEV_WARM_POOL) is not None

            cluster.ensure_context_claim(
                ContextClaim(
                    namespace="harness",
                    context="notes",
                    type="memory",
                    size="1Gi",
                    access_mode="ReadWriteOnce",
                )
            )
            cluster.ensure_sandbox(
                PoolSandbox(
                    namespace="harness",
                    pool="p",
                    index=0,
                    replicas=1,
                    claim="context-notes",
                    runtime=BuiltinRuntime(image="busybox:1.36"),
                )
            )

            def ready() -> bool:
                sandbox = cluster.get_sandbox("harness", "sandbox-p-0")
                return sandbox is not None and sandbox.ready

            eventually(ready)  # the stand-in loop binds the claim and runs the Pod
            claim = cluster.get_claim("harness", "context-notes")
            assert claim is not None and (claim.phase, claim.storage_class) == (
                "Bound",
                DEV_STORAGE_CLASS,
            )

            cluster.delete_sandbox("harness", "sandbox-p-0")
            # the real garbage collector (kube-controller-manager) removes the owned Pod
            eventually(lambda: not cluster.list_pool_objects("harness", "p").pods)
        finally:
            client.close(api)
    assert plane.plane is None and not list((tmp_path / "kube").glob("*.child.json"))

    with LocalControlPlane(
        tmp_path / "kube", "harness", bin_dir=kube_bin_dir, simulate=False, controller_manager=False
    ) as again:
        api = again.api_client()
        try:
            claim = KubernetesCluster(Rest(api)).get_claim("harness", "context-notes")
            assert claim is not None and claim.phase == "Bound"  # data survived the restart
        finally:
            client.close(api)
