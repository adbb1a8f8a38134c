"""Spec 1.1.6 and 1.6: concurrent writers lose nothing; a name is claimed exactly once. One
service for the module: each test writes to namespaces of its own."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tests.api.conftest import Api, context_body
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import fresh

pytestmark = pytest.mark.shared_service
THREADS = 16


@pytest.fixture
def own(api: Api) -> Namespaced:
    """``api`` over a namespace of the test's own (``team1`` in the text)."""
    return namespaced(api, "team1")


def run(count: int, work: Any) -> list[Any]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(work, range(count)))


def all_ok(count: int, status: int, work: Callable[[int], Any]) -> None:
    """Run ``work`` on ``count`` threads; every response must have ``status``."""
    failed = [(r.status_code, r.text) for r in run(count, work) if r.status_code != status]
    assert not failed, failed


def test_concurrent_grants_on_one_context_are_all_kept(own: Namespaced) -> None:
    owner, ctx = own.as_("user:owner"), own.context
    assert owner.post("/v1/contexts", own.context_body()).status_code == 201

    def put_grant(i: int) -> Any:
        body = {"subject": {"kind": "agent", "name": f"a{i:02d}"}, "permissions": ["read"]}
        return owner.put(ctx + "/grants", body)

    all_ok(48, 200, put_grant)
    names = [g["subject"]["name"] for g in owner.get(ctx + "/grants").json()["items"]]
    assert names == [f"a{i:02d}" for i in range(48)] + ["owner"]
    audit = owner.get(ctx + "/audit").json()["items"]
    assert Counter(e["action"] for e in audit) == {"context.created": 1, "grant.set": 48}
    assert all(own.as_(f"agent:a{i:02d}").get(ctx).status_code == 200 for i in range(0, 48, 7))


def test_concurrent_creates_of_one_name_have_one_winner(own: Namespaced) -> None:
    api, ctx = own, own.context

    def create(i: int) -> tuple[int, Any]:
        resp = api.as_(f"user:u{i}").post("/v1/contexts", own.context_body(size=f"{i + 1}Gi"))
        return resp.status_code, resp.json()

    results = run(24, create)
    winners = [i for i, (status, _) in enumerate(results) if status == 201]
    assert len(winners) == 1
    losers = [body for status, body in results if status != 201]
    assert losers == [{"error": "already_exists",
                       "message": "context resource already exists"}] * 23
    winner = winners[0]
    body = api.as_(f"user:u{winner}").get(ctx).json()
    assert body["storage"]["size"] == f"{winner + 1}Gi"
    grants = api.as_(f"user:u{winner}").get(ctx + "/grants").json()["items"]
    assert [g["subject"]["name"] for g in grants] == [f"u{winner}"]
    audit = api.as_(f"user:u{winner}").get(ctx + "/audit").json()["items"]
    assert [e["action"] for e in audit] == ["context.created"]
    assert len(api.as_("service:context-service-admin").get(own.contexts).json()["items"]) == 1


def test_concurrent_publishes_are_serialised(own: Namespaced) -> None:
    api, ctx = own, own.context
    assert api.post("/v1/contexts", own.context_body()).status_code == 201

    def publish(i: int) -> Any:
        body = {"id": f"{i + 1:064x}", "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"}
        return api.post(ctx + "/revisions", body)

    all_ok(32, 201, publish)
    history = [r["id"] for r in api.get(ctx + "/revisions").json()["items"]]
    assert sorted(history) == [f"{i + 1:064x}" for i in range(32)]
    assert api.get(ctx).json()["currentRevision"] == history[-1]


def test_concurrent_attaches_and_detaches(own: Namespaced) -> None:
    api, ctx = own, own.context
    assert api.post("/v1/contexts", own.context_body()).status_code == 201

    def attach(i: int) -> Any:
        body = {"kind": "sandbox", "name": f"s{i:02d}", "accessMode": "readOnly"}
        return api.put(ctx + "/consumers", body)

    all_ok(32, 200, attach)
    names = [c["name"] for c in api.get(ctx + "/consumers").json()["items"]]
    assert names == [f"s{i:02d}" for i in range(32)]

    def detach(i: int) -> Any:
        return api.delete(ctx + "/consumers", {"kind": "sandbox", "name": f"s{i * 2:02d}"})

    all_ok(16, 200, detach)
    names = [c["name"] for c in api.get(ctx + "/consumers").json()["items"]]
    assert names == [f"s{i:02d}" for i in range(1, 32, 2)]


def test_concurrent_creates_in_many_namespaces_all_succeed(api: Api) -> None:
    ns = fresh("ns")  # namespaces {ns}-0 ... {ns}-23, the test's own
    all_ok(24, 201, lambda i: api.post("/v1/contexts", context_body(namespace=f"{ns}-{i}")))
    for i in (0, 11, 23):
        items = api.get(f"/v1/namespaces/{ns}-{i}/contexts").json()["items"]
        assert [c["namespace"] for c in items] == [f"{ns}-{i}"]
