"""Kubernetes fixtures: one real API server per session, a fresh namespace per test.

Tests using them carry the ``k8s`` marker. Without binaries (or etcd) they are skipped locally
with the reason, and fail when ``CI=true``. ``CS_KUBE_BIN_DIR`` points at prebuilt binaries.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
import pathlib
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest

from context_service.adapters.kubernetes.client import close
from context_service.adapters.kubernetes.cluster import (
    SANDBOX,
    SANDBOX_CLAIM,
    SANDBOX_TEMPLATE,
    SNAPSHOT,
    SNAPSHOT_CLASS,
    WARM_POOL,
    KubernetesCluster,
)
from context_service.adapters.kubernetes.rest import (
    CONFIG_MAPS,
    JSON,
    PODS,
    PVCS,
    STORAGE_CLASSES,
    Resource,
    Rest,
)
from context_service.devcluster.controlplane import ControlPlane
from context_service.devcluster.devsim import DevSimulator
from context_service.devcluster.local import ENSURE_SCRIPT
from context_service.domain.cluster import Cluster, ClusterError
from tests.support.fake_cluster import FakeCluster
from tests.support.kube import running_apiserver


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"Kubernetes test binaries unavailable under CI=true: {reason}")
    pytest.skip(f"no local kube-apiserver: {reason}")


@functools.cache
def _obtain_binaries() -> pathlib.Path | str:
    """The binary directory, or why there is none (asked once per process: a failing first
    build is not retried for every test)."""
    script = ENSURE_SCRIPT
    try:
        out = subprocess.run(["bash", str(script)], check=True, stdout=subprocess.PIPE, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        return f"{script.name} failed: {exc}"
    bin_dir = pathlib.Path(out.stdout.strip().splitlines()[-1])
    if not (bin_dir / "kube-apiserver").is_file():
        return f"no kube-apiserver in {bin_dir}"
    if shutil.which("etcd") is None:
        return "etcd is not on PATH (Debian package etcd-server)"
    return bin_dir


@pytest.fixture(scope="session")
def kube_bin_dir() -> pathlib.Path:
    """Directory with kube-apiserver and kube-controller-manager (built once, then cached)."""
    found = _obtain_binaries()
    if isinstance(found, str):
        _unavailable(found)
    return found


@pytest.fixture(scope="session")
def kube_server(
    kube_bin_dir: pathlib.Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    """The session's etcd + kube-apiserver with our CRDs (no controller-manager)."""
    with running_apiserver(kube_bin_dir, tmp_path_factory.mktemp("kube")) as plane:
        yield plane


@pytest.fixture(scope="session")
def kube_api(kube_server: ControlPlane) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` connected to the session server."""
    api = kube_server.api_client()
    yield api
    close(api)


@pytest.fixture(scope="session")
def kubeconfig(kube_server: ControlPlane) -> pathlib.Path:
    """Path of a kubeconfig for the session server (point ``KUBECONFIG`` at it)."""
    return kube_server.kubeconfig


@pytest.fixture(scope="session")
def kube_rest(kube_api: Any) -> Rest:
    return Rest(kube_api)


@pytest.fixture(scope="session")
def kube_cluster(kube_rest: Rest) -> KubernetesCluster:
    """The cluster port implemented against the session server."""
    return KubernetesCluster(kube_rest)


@pytest.fixture
def kube_ns(kube_cluster: KubernetesCluster, request: pytest.FixtureRequest) -> str:
    """A fresh namespace named after the test (never deleted: no namespace controller runs)."""
    name = "t-" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:12]
    kube_cluster.ensure_namespace(name)
    return name


@pytest.fixture
def kube_sim(kube_rest: Rest, kube_ns: str) -> DevSimulator:
    """The development stand-in for node-side controllers, limited to the test's namespace;
    call ``settle()`` where the cluster should catch up."""
    return DevSimulator(kube_rest, kube_ns)


# --- the port contract: one suite, two backends ---------------------------------------------

RESOURCES: dict[str, Resource] = {
    r.plural: r
    for r in (
        PVCS,
        PODS,
        CONFIG_MAPS,
        STORAGE_CLASSES,
        SANDBOX,
        SANDBOX_CLAIM,
        SANDBOX_TEMPLATE,
        WARM_POOL,
        SNAPSHOT,
        SNAPSHOT_CLASS,
    )
}


class PortBackend:
    """A port implementation plus raw access to its objects, for contract tests that seed the
    same JSON into the real server and into the fake."""

    def __init__(self, cluster: Cluster, ns: str) -> None:
        self.cluster = cluster
        self.ns = ns

    def put(self, plural: str, item: JSON) -> None:
        raise NotImplementedError

    def read(self, plural: str, name: str) -> JSON | None:
        raise NotImplementedError

    def write_status(self, plural: str, name: str, status: JSON) -> None:
        raise NotImplementedError

    def put_deleting(self, plural: str, item: JSON) -> None:
        """Store ``item`` already marked for deletion (held by a finalizer)."""
        raise NotImplementedError


class KubePortBackend(PortBackend):
    def __init__(self, cluster: KubernetesCluster, ns: str) -> None:
        super().__init__(cluster, ns)
        self.rest = cluster.rest
        self.cluster_scoped: list[tuple[str, str]] = []

    def put(self, plural: str, item: JSON) -> None:
        res = RESOURCES[plural]
        self.rest.create(res.path(self.ns), item, "test")
        if not res.namespaced:
            self.cluster_scoped.append((plural, item["metadata"]["name"]))

    def read(self, plural: str, name: str) -> JSON | None:
        try:
            return self.rest.get(RESOURCES[plural].path(self.ns, name))
        except ClusterError as exc:
            if exc.status == 404:
                return None
            raise

    def write_status(self, plural: str, name: str, status: JSON) -> None:
        self.rest.patch(RESOURCES[plural].path(self.ns, name, "status"), {"status": status}, "t")

    def put_deleting(self, plural: str, item: JSON) -> None:
        item = copy.deepcopy(item)
        item["metadata"]["finalizers"] = ["test.context.rossoctl.io/hold"]
        self.put(plural, item)
        self.rest.delete(RESOURCES[plural].path(self.ns, item["metadata"]["name"]))

    def close(self) -> None:
        """Remove cluster-scoped objects: the session server is shared by all tests (two
        default StorageClasses would, for one, make the server reject class-less PVCs)."""
        for plural, name in self.cluster_scoped:
            self.rest.delete(RESOURCES[plural].path(None, name))


class FakePortBackend(PortBackend):
    def __init__(self, ns: str) -> None:
        self.fake = FakeCluster()
        super().__init__(self.fake, ns)

    def put(self, plural: str, item: JSON) -> None:
        item = copy.deepcopy(item)
        if RESOURCES[plural].namespaced:
            item["metadata"]["namespace"] = self.ns
        self.fake.put(plural, item)

    def read(self, plural: str, name: str) -> JSON | None:
        return self.fake.manifest(plural, self.ns if RESOURCES[plural].namespaced else "", name)

    def write_status(self, plural: str, name: str, status: JSON) -> None:
        self.fake.objects[(plural, self.ns, name)]["status"] = status

    def put_deleting(self, plural: str, item: JSON) -> None:
        item = copy.deepcopy(item)
        item["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
        self.put(plural, item)


@pytest.fixture(params=["fake", pytest.param("kube", marks=pytest.mark.k8s)])
def port_backend(request: pytest.FixtureRequest) -> Iterator[PortBackend]:
    """The cluster port twice: the in-memory fake, and the adapter on the session server."""
    if request.param == "fake":
        yield FakePortBackend("t-fake")
        return
    backend = KubePortBackend(
        request.getfixturevalue("kube_cluster"), request.getfixturevalue("kube_ns")
    )
    yield backend
    backend.close()
