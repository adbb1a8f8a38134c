"""One PVC name, one owner, refused at create time (spec 1.5 and 1.12 step 4, extended): context
``x-workspace`` and shared pool ``context-x`` both name the PVC ``context-x-workspace``, so once
one of them is recorded, creating the other answers the route's ``409 already_exists``, even
though the reconciler has not created the first owner's PVC yet. Contexts in another namespace
than the pools' (``CS_NAMESPACE``) never collide with a pool."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.kubernetes.cluster import KubernetesCluster
from context_service.adapters.kubernetes.rest import PVCS
from tests.support.pool_fixtures import Seed

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
OWNER = {"X-Context-Subject": "user:alice"}
POOLS = "/v1/sandbox-pools"
SHARED = {"size": "1Gi", "accessMode": "ReadWriteMany"}
DEDICATED = {"size": "1Gi", "accessMode": "ReadWriteOnce"}
CONTEXT_EXISTS = (409, "already_exists", "context resource already exists")
POOL_EXISTS = (409, "already_exists", "sandbox pool already exists")


@pytest.fixture
def client(kube_container: bootstrap.Container) -> Iterator[TestClient[Any]]:
    """The routes with the views maintained and no reconciler: owners stay recorded only."""
    kube_container.start_workers(("projections",))
    with TestClient(app=bootstrap.app(kube_container)) as found:
        yield found


@pytest.fixture
def other_ns(kube_cluster: KubernetesCluster, kube_ns: str) -> str:
    kube_cluster.ensure_namespace(kube_ns + "-b")
    return kube_ns + "-b"


def create_context(client: TestClient[Any], ns: str, name: str) -> Any:
    body = {"name": name, "namespace": ns, "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}
    return client.post("/v1/contexts", json=body, headers=OWNER)


def create_pool(client: TestClient[Any], name: str, workspace: dict[str, str],
                replicas: int = 1) -> Any:
    return client.post(POOLS, json={"name": name, "replicas": replicas, "workspace": workspace})


def error(response: Any) -> tuple[int, str, str]:
    body = response.json()
    return response.status_code, body.get("error", ""), body.get("message", "")


def test_a_recorded_pool_takes_the_context_name_of_its_workspace_claim(
        client: TestClient[Any], kube_ns: str, other_ns: str, seed: Seed) -> None:
    assert create_pool(client, "context-x", SHARED).status_code == 201
    assert create_pool(client, "context-d", DEDICATED, replicas=2).status_code == 201
    for claim in ("context-x-workspace", "context-d-workspace-0", "context-d-workspace-1"):
        assert seed.read(PVCS.path(kube_ns, claim)) is None  # recorded, not reconciled

    assert error(create_context(client, kube_ns, "x-workspace")) == CONTEXT_EXISTS
    assert error(create_context(client, kube_ns, "d-workspace-1")) == CONTEXT_EXISTS
    # names no pool claim matches, and the same name where no pool lives, are free
    assert create_context(client, kube_ns, "d-workspace-2").status_code == 201
    assert create_context(client, kube_ns, "x-workspace-0").status_code == 201
    assert create_context(client, other_ns, "x-workspace").status_code == 201

    # a released pool no longer takes the name (its PVC was never made)
    assert client.delete(POOLS + "/context-x").status_code == 204
    assert create_context(client, kube_ns, "x-workspace").status_code == 201


def test_a_recorded_context_takes_the_pool_name_of_its_claim(
        client: TestClient[Any], kube_ns: str, other_ns: str, seed: Seed) -> None:
    assert create_context(client, kube_ns, "y-workspace").status_code == 201
    assert create_context(client, kube_ns, "z-workspace-1").status_code == 201
    assert create_context(client, other_ns, "w-workspace").status_code == 201
    for claim in ("context-y-workspace", "context-z-workspace-1"):
        assert seed.read(PVCS.path(kube_ns, claim)) is None  # recorded, not reconciled

    assert error(create_pool(client, "context-y", SHARED)) == POOL_EXISTS
    assert error(create_pool(client, "context-z", DEDICATED, replicas=2)) == POOL_EXISTS
    # a pool creating none of those claims, and a context of another namespace, leave it free
    assert create_pool(client, "context-z", DEDICATED, replicas=1).status_code == 201
    assert create_pool(client, "context-w", SHARED).status_code == 201

    # a deleted context no longer takes the name
    deleted = client.delete(f"/v1/namespaces/{kube_ns}/contexts/y-workspace", headers=OWNER)
    assert deleted.status_code == 204
    assert create_pool(client, "context-y", SHARED).status_code == 201
