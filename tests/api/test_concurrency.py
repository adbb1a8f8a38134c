"""Spec 1.1.6 and 1.6: concurrent writers lose nothing; a name is claimed exactly once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.api.conftest import Api, context_body

LIST = "/v1/namespaces/team1/contexts"
CTX = LIST + "/research-memory"
THREADS = 16


def run(count: int, work: Any) -> list[Any]:
    with ThreadPoolExecutor(THREADS) as pool:
        return list(pool.map(work, range(count)))


def all_ok(count: int, status: int, work: Callable[[int], Any]) -> None:
    """Run ``work`` on ``count`` threads; every response must have ``status``."""
    failed = [(r.status_code, r.text) for r in run(count, work) if r.status_code != status]
    assert not failed, failed


def test_concurrent_grants_on_one_context_are_all_kept(api: Api) -> None:
    owner = api.as_("user:owner")
    assert owner.post("/v1/contexts", context_body()).status_code == 201

    def put_grant(i: int) -> Any:
        body = {"subject": {"kind": "agent", "name": f"a{i:02d}"}, "permissions": ["read"]}
        return owner.put(CTX + "/grants", body)

    all_ok(48, 200, put_grant)
    names = [g["subject"]["name"] for g in owner.get(CTX + "/grants").json()["items"]]
    assert names == [f"a{i:02d}" for i in range(48)] + ["owner"]
    audit = owner.get(CTX + "/audit").json()["items"]
    assert Counter(e["action"] for e in audit) == {"context.created": 1, "grant.set": 48}
    assert all(api.as_(f"agent:a{i:02d}").get(CTX).status_code == 200 for i in range(0, 48, 7))


def test_concurrent_creates_of_one_name_have_one_winner(api: Api) -> None:
    def create(i: int) -> tuple[int, Any]:
        resp = api.as_(f"user:u{i}").post("/v1/contexts", context_body(size=f"{i + 1}Gi"))
        return resp.status_code, resp.json()

    results = run(24, create)
    winners = [i for i, (status, _) in enumerate(results) if status == 201]
    assert len(winners) == 1
    losers = [body for status, body in results if status != 201]
    assert losers == [{"error": "already_exists",
                       "message": "context resource already exists"}] * 23
    winner = winners[0]
    body = api.as_(f"user:u{winner}").get(CTX).json()
    assert body["storage"]["size"] == f"{winner + 1}Gi"
    grants = api.as_(f"user:u{winner}").get(CTX + "/grants").json()["items"]
    assert [g["subject"]["name"] for g in grants] == [f"u{winner}"]
    audit = api.as_(f"user:u{winner}").get(CTX + "/audit").json()["items"]
    assert [e["action"] for e in audit] == ["context.created"]
    assert len(api.as_("service:context-service-admin").get(LIST).json()["items"]) == 1


def test_concurrent_publishes_are_serialised(api: Api) -> None:
    assert api.post("/v1/contexts", context_body()).status_code == 201

    def publish(i: int) -> Any:
        body = {"id": f"{i + 1:064x}", "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"}
        return api.post(CTX + "/revisions", body)

    all_ok(32, 201, publish)
    history = [r["id"] for r in api.get(CTX + "/revisions").json()["items"]]
    assert sorted(history) == [f"{i + 1:064x}" for i in range(32)]
    assert api.get(CTX).json()["currentRevision"] == history[-1]


def test_concurrent_attaches_and_detaches(api: Api) -> None:
    assert api.post("/v1/contexts", context_body()).status_code == 201

    def attach(i: int) -> Any:
        body = {"kind": "sandbox", "name": f"s{i:02d}", "accessMode": "readOnly"}
        return api.put(CTX + "/consumers", body)

    all_ok(32, 200, attach)
    names = [c["name"] for c in api.get(CTX + "/consumers").json()["items"]]
    assert names == [f"s{i:02d}" for i in range(32)]

    def detach(i: int) -> Any:
        return api.delete(CTX + "/consumers", {"kind": "sandbox", "name": f"s{i * 2:02d}"})

    all_ok(16, 200, detach)
    names = [c["name"] for c in api.get(CTX + "/consumers").json()["items"]]
    assert names == [f"s{i:02d}" for i in range(1, 32, 2)]


def test_concurrent_creates_in_many_namespaces_all_succeed(api: Api) -> None:
    all_ok(24, 201, lambda i: api.post("/v1/contexts", context_body(namespace=f"ns{i}")))
    for i in (0, 11, 23):
        items = api.get(f"/v1/namespaces/ns{i}/contexts").json()["items"]
        assert [c["namespace"] for c in items] == [f"ns{i}"]
