"""Edges of the sandbox-pool routes against the real API server: path names no pool can have,
profiles whose lists have the wrong shape, and storage classes the API server would refuse (each
answered at once instead of a 500 or a pool that could never be provisioned)."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from tests.support.pool_fixtures import Seed

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
POOLS = "/v1/sandbox-pools"
WS = {"size": "1Gi", "accessMode": "ReadWriteOnce"}
NOT_FOUND = (404, {"error": "not_found", "message": "sandbox pool not found"})


def answer(response: Any) -> tuple[int, Any]:
    return response.status_code, response.json()


def bad(message: str) -> tuple[int, dict[str, str]]:
    return 400, {"error": "invalid_request", "message": message}


def test_a_path_name_holding_nul_is_not_found(pool_client: TestClient[Any]) -> None:
    assert pool_client.post(POOLS, json={"name": "a", "replicas": 1,
                                         "workspace": WS}).status_code == 201
    for path in (f"{POOLS}/a%00", f"{POOLS}/%00"):
        assert answer(pool_client.get(path)) == NOT_FOUND, path
        assert answer(pool_client.delete(path)) == NOT_FOUND, path
    assert pool_client.get(f"{POOLS}/a").status_code == 200


def test_profile_lists_of_the_wrong_shape_are_refused(pool_client: TestClient[Any],
                                                      seed: Seed) -> None:
    def template(name: str, first: dict[str, Any], **pod: Any) -> None:
        seed.template(name, {"podTemplate": {"spec": {
            "containers": [{"name": "c", "image": "x", **first}], **pod}}})

    template("volumes", {}, volumes=5)
    template("volume-map", {}, volumes={"workspace": {}})
    template("mounts", {"volumeMounts": 7})
    template("mount-map", {"volumeMounts": {"name": "data"}})
    template("fine", {"volumeMounts": None}, volumes=None,
             initContainers=[{"name": "i", "image": "x", "volumeMounts": "odd"}])
    invalid = 'invalid sandbox pool: sandbox profile "{}" has {}'
    for profile, detail in (("volumes", "invalid podTemplate.spec.volumes"),
                            ("volume-map", "invalid podTemplate.spec.volumes"),
                            ("mounts", "an invalid first container"),
                            ("mount-map", "an invalid first container")):
        body = {"name": "p", "replicas": 1, "sandboxProfile": profile, "workspace": WS}
        assert answer(pool_client.post(POOLS, json=body)) == bad(
            invalid.format(profile, detail)), profile
    assert pool_client.get(POOLS).json() == {"items": []}  # nothing half-recorded
    body = {"name": "p", "replicas": 1, "sandboxProfile": "fine", "workspace": WS}
    assert pool_client.post(POOLS, json=body).status_code == 201


def test_a_storage_class_the_api_server_refuses_is_refused(pool_client: TestClient[Any]) -> None:
    message = "workspace.storageClass must be a lowercase Kubernetes name"
    for storage_class in ("Fast SSD", "fast_ssd", "Gold", "a" * 254, "-x", " "):
        body = {"name": "p", "replicas": 1, "workspace": {**WS, "storageClass": storage_class}}
        assert answer(pool_client.post(POOLS, json=body)) == bad(message), storage_class
    # the rule comes after the access mode (spec 2.3 step 8), managed workspaces only
    body = {"name": "p", "replicas": 1,
            "workspace": {"size": "1Gi", "accessMode": "x", "storageClass": "Bad"}}
    assert answer(pool_client.post(POOLS, json=body)) == bad(
        "workspace.accessMode must be ReadWriteMany or ReadWriteOnce")
    body = {"name": "p", "replicas": 1, "warmPoolRef": "w", "workspace": {"storageClass": "B"}}
    assert answer(pool_client.post(POOLS, json=body)) == bad(
        "warmPoolRef cannot be combined with workspace settings")
    assert pool_client.get(POOLS).json() == {"items": []}
    body = {"name": "p", "replicas": 1, "workspace": {**WS, "storageClass": "fast.ssd-1"}}
    created = pool_client.post(POOLS, json=body)
    assert created.status_code == 201
    assert created.json()["workspace"]["storageClass"] == "fast.ssd-1"
