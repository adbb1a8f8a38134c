"""Fixtures for pool and reconciler tests: a service container wired to the session
kube-apiserver (``CS_NAMESPACE`` = the test's namespace), an HTTP client over it, platform
objects to seed (templates, warm pools, claims, Pods), and ``eventually`` for asynchronous
convergence."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import (
    SANDBOX_TEMPLATE,
    WARM_POOL,
    KubernetesCluster,
)
from context_service.adapters.kubernetes.reconciler import Reconciler
from context_service.adapters.kubernetes.rest import JSON, PODS, PVCS, Rest
from context_service.config import Settings
from context_service.domain.cluster import ClusterError

T = TypeVar("T")
IMAGE = "busybox:1.36"


def eventually(check: Callable[[], T | None], timeout: float = 15.0,
               interval: float = 0.05) -> T:
    """Poll ``check`` until it returns a truthy value without raising AssertionError."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        else:
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"condition not met within {timeout}s (last: {value!r})")
        time.sleep(interval)


class Seed:
    """Platform objects the pool API reads, created straight through the JSON layer."""

    def __init__(self, rest: Rest, namespace: str) -> None:
        self.rest = rest
        self.ns = namespace

    def template(self, name: str, spec: JSON | None = None) -> None:
        body: JSON = {"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
                      "kind": "SandboxTemplate", "metadata": {"name": name}}
        body["spec"] = spec if spec is not None else {"podTemplate": {
            "metadata": {"labels": {"profile": name}},
            "spec": {"containers": [{"name": "dev", "image": "dev:1"}]}}}
        self.rest.create(SANDBOX_TEMPLATE.path(self.ns), body, "test")

    def warm_pool(self, name: str, template: str) -> None:
        body = {"apiVersion": "extensions.agents.x-k8s.io/v1beta1", "kind": "SandboxWarmPool",
                "metadata": {"name": name},
                "spec": {"replicas": 2, "sandboxTemplateRef": {"name": template}}}
        self.rest.create(WARM_POOL.path(self.ns), body, "test")

    def claim(self, name: str, size: str = "2Gi", modes: tuple[str, ...] = ("ReadWriteMany",),
              labels: dict[str, str] | None = None, namespace: str | None = None) -> None:
        body = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "labels": labels or {}},
                "spec": {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}}
        self.rest.create(PVCS.path(namespace or self.ns), body, "test")

    def pod(self, name: str, claim: str, read_only: bool = False, service_account: str = "",
            namespace: str | None = None) -> None:
        spec: JSON = {"containers": [{"name": "c", "image": "x", "volumeMounts": [
            {"name": "data", "mountPath": "/data", "readOnly": read_only}]}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}
        if service_account:
            spec["serviceAccountName"] = service_account
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
        self.rest.create(PODS.path(namespace or self.ns), body, "test")

    def delete_pod(self, name: str, namespace: str | None = None) -> None:
        self.rest.delete(PODS.path(namespace or self.ns, name), grace=0)

    def read(self, path: str) -> JSON | None:
        try:
            return self.rest.get(path)
        except ClusterError as exc:
            if exc.status == 404:
                return None
            raise


@pytest.fixture
def seed(kube_rest: Rest, kube_ns: str) -> Seed:
    return Seed(kube_rest, kube_ns)


@pytest.fixture
def pool_settings(tmp_path: Path, kube_ns: str) -> Settings:
    return Settings(data_dir=tmp_path, sandbox_image=IMAGE, kube_mode="off", namespace=kube_ns,
                    sandbox_service_account="runner",
                    workers=("projections", "query-index", "reconciler", "snapshots"))


@pytest.fixture
def kube_container(pool_settings: Settings, database_url: str,
                   kube_cluster: KubernetesCluster) -> Iterator[bootstrap.Container]:
    """A container over a fresh database and the session cluster; workers not started."""
    built = bootstrap.build(pool_settings, url=database_url, pool_size=4)
    built.cluster = kube_cluster
    yield built
    built.close()


@pytest.fixture
def pool_container(kube_container: bootstrap.Container) -> bootstrap.Container:
    """The container with every worker running, the reconciler included."""
    kube_container.start_workers()
    return kube_container


@pytest.fixture
def pool_client(pool_container: bootstrap.Container) -> Iterator[TestClient[Any]]:
    with TestClient(app=bootstrap.app(pool_container)) as client:
        yield client


def reconciler_of(container: bootstrap.Container) -> Reconciler:
    """The started reconciler of a container."""
    return next(w for w in container.started if isinstance(w, Reconciler))


def manual_reconciler(container: bootstrap.Container, **options: Any) -> Reconciler:
    """A reconciler over the container that is driven with ``sync()`` (no lock, no threads)."""
    assert container.cluster is not None
    return Reconciler(container.cluster, container.store, container.contexts, container.pools,
                      namespace=container.settings.namespace, **options)
