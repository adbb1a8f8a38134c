"""Kubernetes fixtures: one real API server per session, a fresh namespace per test.

Tests using them carry the ``k8s`` marker. Without binaries (or etcd) they are skipped locally
with the reason, and fail when ``CI=true``. ``CS_KUBE_BIN_DIR`` points at prebuilt binaries.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest

from src.adapters.kubernetes.client import close
from src.adapters.kubernetes.cluster import KubernetesCluster
from src.adapters.kubernetes.controlplane import ControlPlane
from src.adapters.kubernetes.devsim import DevSimulator
from src.adapters.kubernetes.rest import Rest
from tests.support.kube import ROOT, running_apiserver


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"Kubernetes test binaries unavailable under CI=true: {reason}")
    pytest.skip(f"no local kube-apiserver: {reason}")


@pytest.fixture(scope="session")
def kube_bin_dir() -> pathlib.Path:
    """Directory with kube-apiserver and kube-controller-manager (built once, then cached)."""
    script = ROOT / "scripts" / "kube" / "ensure-kube.sh"
    try:
        out = subprocess.run([str(script)], check=True, stdout=subprocess.PIPE, text=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        _unavailable(f"{script.name} failed: {exc}")
    bin_dir = pathlib.Path(out.stdout.strip().splitlines()[-1])
    if not (bin_dir / "kube-apiserver").is_file():
        _unavailable(f"no kube-apiserver in {bin_dir}")
    if shutil.which("etcd") is None:
        _unavailable("etcd is not on PATH (Debian package etcd-server)")
    return bin_dir


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
