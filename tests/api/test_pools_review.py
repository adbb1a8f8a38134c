"""Sandbox pools against the real API server, as an operator meets them: a profile the log
could not hold, the Pods a released pool leaves behind while they stop, the list's order, and
path names no pool can have."""

from __future__ import annotations

from typing import Any

import pytest
from litestar.testing import TestClient

from context_service.adapters.kubernetes.rest import JSON, PODS, PVCS, Rest
from tests.support.pool_fixtures import Seed

pytestmark = [pytest.mark.k8s, pytest.mark.postgres]
POOLS = "/v1/sandbox-pools"
WS = {"size": "1Gi", "accessMode": "ReadWriteOnce"}
NOT_FOUND = (404, {"error": "not_found", "message": "sandbox pool not found"})
TAKEN = (409, {"error": "already_exists", "message": "sandbox pool already exists"})
MANAGED = {"app.kubernetes.io/managed-by": "context-service"}
POOL = "context.rossoctl.io/pool"
HOLD = "example.com/hold"


def answer(response: Any) -> tuple[int, Any]:
    return response.status_code, response.json()


def test_a_profile_the_log_cannot_hold_is_refused(pool_client: TestClient[Any],
                                                  seed: Seed) -> None:
    """A template is copied into the recorded pool: a U+0000 in it (an env value, say) would
    stop the pool view for every pool, so the profile is refused like any unusable one."""
    seed.template("nul", {"podTemplate": {"spec": {"containers": [
        {"name": "dev", "image": "dev:1", "env": [{"name": "A", "value": "a\u0000b"}]}]}}})
    body = {"name": "p", "replicas": 1, "sandboxProfile": "nul", "workspace": WS}
    assert answer(pool_client.post(POOLS, json=body)) == (400, {
        "error": "invalid_request",
        "message": 'invalid sandbox pool: sandbox profile "nul" holds U+0000, '
                   "which cannot be recorded"})
    seed.template("fine")
    body = {"name": "q", "replicas": 1, "sandboxProfile": "fine", "workspace": WS}
    assert pool_client.post(POOLS, json=body).status_code == 201
    assert [p["name"] for p in pool_client.get(POOLS).json()["items"]] == ["q"]
    assert pool_client.get(f"{POOLS}/q").status_code == 200


def _pod(rest: Rest, ns: str, name: str, labels: dict[str, str], held: bool = False) -> None:
    metadata: JSON = {"name": name, "labels": labels}
    if held:
        metadata["finalizers"] = [HOLD]
    rest.create(PODS.path(ns), {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                                "spec": {"containers": [{"name": "c", "image": "x"}]}}, "test")


def test_pods_of_a_released_pool_hold_its_name(pool_client: TestClient[Any], seed: Seed,
                                               kube_rest: Rest, kube_ns: str) -> None:
    """A released pool's Sandboxes go at once, its Pods only once they stopped. A pool of the
    same name made meanwhile would count the old Pods as its own (ready while its own are
    not) and its selector would route work to sandboxes that are stopping."""
    seed.claim("data")
    _pod(kube_rest, kube_ns, "sandbox-p-0", {**MANAGED, POOL: "p"}, held=True)
    kube_rest.delete(PODS.path(kube_ns, "sandbox-p-0"), grace=0)  # stopping, not gone
    assert seed.read(PODS.path(kube_ns, "sandbox-p-0")) is not None
    body = {"name": "p", "replicas": 1, "workspace": {"claimName": "data", "readOnly": True}}
    assert answer(pool_client.post(POOLS, json=body)) == TAKEN
    assert pool_client.get(POOLS).json() == {"items": []}
    kube_rest.patch(PODS.path(kube_ns, "sandbox-p-0"), {"metadata": {"finalizers": None}},
                    "test")
    assert seed.read(PODS.path(kube_ns, "sandbox-p-0")) is None
    assert pool_client.post(POOLS, json=body).status_code == 201
    # a Pod someone else labelled with a pool name is not the service's: spec 1.12 step 4
    # counts only objects carrying both labels
    _pod(kube_rest, kube_ns, "mine", {POOL: "q"})
    assert pool_client.post(POOLS, json={**body, "name": "q"}).status_code == 201


def test_the_list_is_in_name_order(pool_client: TestClient[Any]) -> None:
    """Sorted by name as plain strings (spec 1.12), whatever the database's collation says
    about punctuation."""
    for name in ("ab", "a-c", "a-b", "a1"):
        body = {"name": name, "replicas": 1, "workspace": WS}
        assert pool_client.post(POOLS, json=body).status_code == 201, name
    assert [p["name"] for p in pool_client.get(POOLS).json()["items"]] == [
        "a-b", "a-c", "a1", "ab"]


def test_path_names_no_pool_can_have_are_not_found(pool_client: TestClient[Any]) -> None:
    for name in ("a" * 4000, "%FF", "%C3%A9", "%ED%A0%80", "A", "a%20"):
        path = f"{POOLS}/{name}"
        assert answer(pool_client.get(path)) == NOT_FOUND, name[:20]
        assert answer(pool_client.delete(path)) == NOT_FOUND, name[:20]


def test_an_existing_claim_being_deleted_is_refused(pool_client: TestClient[Any], seed: Seed,
                                                     kube_rest: Rest, kube_ns: str) -> None:
    """A claim on its way out cannot be mounted by a new Pod: the pool would stay
    provisioning for good, so it is refused like one that is not there."""
    seed.claim("going")
    kube_rest.patch(PVCS.path(kube_ns, "going"), {"metadata": {"finalizers": [HOLD]}}, "test")
    kube_rest.delete(PVCS.path(kube_ns, "going"))
    going = seed.read(PVCS.path(kube_ns, "going"))
    assert going is not None and going["metadata"].get("deletionTimestamp")
    body = {"name": "p", "replicas": 1, "workspace": {"claimName": "going", "readOnly": False}}
    assert answer(pool_client.post(POOLS, json=body)) == (400, {
        "error": "invalid_request",
        "message": 'invalid sandbox pool: workspace claim "going" is being deleted'})
    assert pool_client.get(POOLS).json() == {"items": []}
    seed.claim("staying")
    body["workspace"] = {"claimName": "staying", "readOnly": False}
    assert pool_client.post(POOLS, json=body).status_code == 201
