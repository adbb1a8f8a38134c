"""Spec 1.1.5 and 8.3: the caller from ``X-Context-Subject``, and ``CS_REQUIRE_SUBJECT``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.config import Settings
from tests.api.conftest import Api, context_body, each

CTX = "/v1/namespaces/team1/contexts/research-memory"
MALFORMED = "X-Context-Subject must be kind:name with kind user, agent, workload or service"
UNAUTHENTICATED = '{"error":"unauthenticated","message":"X-Context-Subject is required"}'
FULL = ["read", "write", "attach", "derive", "administer"]



def assert_malformed(resp: Any) -> None:
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"error": "invalid_request", "message": MALFORMED}


def context_routes() -> list[tuple[str, str, Any]]:
    """Every context route with a body that would otherwise be acceptable."""
    grant = {"subject": {"kind": "agent", "name": "a"}, "permissions": ["read"]}
    revision = {"id": "a" * 64, "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"}
    return [
        ("POST", "/v1/contexts", context_body(name="other")),
        ("GET", "/v1/namespaces/team1/contexts", None),
        ("GET", CTX, None),
        ("GET", CTX + "/revisions", None),
        ("POST", CTX + "/revisions", revision),
        ("GET", CTX + "/grants", None),
        ("PUT", CTX + "/grants", grant),
        ("DELETE", CTX + "/grants", {"kind": "agent", "name": "a"}),
        ("GET", CTX + "/consumers", None),
        ("PUT", CTX + "/consumers", {"kind": "agent", "name": "a", "accessMode": "readOnly"}),
        ("DELETE", CTX + "/consumers", {"kind": "agent", "name": "a"}),
        ("GET", CTX + "/audit", None),
        ("DELETE", CTX, None),
    ]


@pytest.fixture
def strict_api(settings: Settings, database_url: str) -> Iterator[Api]:
    built = bootstrap.build(dataclasses.replace(settings, require_subject=True),
                            url=database_url, pool_size=4)
    built.start_workers()
    try:
        with TestClient(app=bootstrap.app(built)) as client:
            yield Api(client)
    finally:
        built.close()


def test_absent_header_is_user_anonymous(api: Api) -> None:
    assert api.post("/v1/contexts", context_body()).status_code == 201
    grants = api.as_("user:anonymous").get(CTX + "/grants").json()["items"]
    assert [g["subject"] for g in grants] == [{"kind": "user", "name": "anonymous"}]
    assert api.as_("user:alice").get(CTX).status_code == 404


def test_blank_header_counts_as_absent(api: Api) -> None:
    assert api.post("/v1/contexts", context_body()).status_code == 201
    for blank in ("", "   ", "\t"):
        resp = api.as_(blank).get(CTX)
        assert resp.status_code == 200, blank
        assert resp.json()["effectiveAccess"] == FULL


def test_surrounding_whitespace_is_trimmed(api: Api) -> None:
    assert api.as_("  user:alice \t").post("/v1/contexts", context_body()).status_code == 201
    assert api.as_("user:alice").get(CTX).status_code == 200


def test_name_is_split_at_the_first_colon(api: Api) -> None:
    for subject in ("user:github:alice", "service:team1/agent-sa", "workload:a:b/c"):
        name = subject.split(":", 1)[1].replace(":", "-").replace("/", "-")
        resp = api.as_(subject).post("/v1/contexts", context_body(name=name))
        assert resp.status_code == 201, resp.text
        kind, _, rest = subject.partition(":")
        audit = api.as_(subject).get(f"/v1/namespaces/team1/contexts/{name}/audit").json()
        assert audit["items"][0]["subject"] == {"kind": kind, "name": rest}
    assert api.as_("user:github").get("/v1/namespaces/team1/contexts").json() == {"items": []}


def test_every_kind_is_accepted(api: Api) -> None:
    for kind in ("user", "agent", "workload", "service"):
        resp = api.as_(f"{kind}:x").post("/v1/contexts", context_body(name=kind))
        assert resp.status_code == 201, resp.text
        assert api.as_(f"{kind}:x").get(f"/v1/namespaces/team1/contexts/{kind}").status_code == 200


def test_malformed_headers_are_rejected(api: Api) -> None:
    cases = ["alice", "user", "user:", ":alice", "user:   ", "  :alice", "User:alice",
             "USER:alice", "robot:alice", "users:alice", "user :alice", " user:", "group:x",
             "kind:name"]
    each(cases, lambda header: assert_malformed(
        api.as_(header).post("/v1/contexts", context_body())))
    assert api.get("/v1/namespaces/team1/contexts").json() == {"items": []}


def test_malformed_header_is_checked_on_every_context_route(api: Api) -> None:
    assert api.post("/v1/contexts", context_body()).status_code == 201
    bad = api.as_("nobody")
    each(context_routes(), lambda r: assert_malformed(bad.request(r[0], r[1], r[2])))
    assert api.get(CTX).status_code == 200


def test_subject_is_evaluated_before_body_and_access(api: Api) -> None:
    bad = api.as_("robot:x")
    assert_malformed(bad.post("/v1/contexts", raw=b""))
    assert_malformed(bad.post("/v1/contexts", raw=b"[1, 2"))
    assert_malformed(bad.post("/v1/contexts", raw=b" " * (2 * 1024 * 1024)))
    assert_malformed(bad.get("/v1/namespaces/team1/contexts/absent"))
    assert_malformed(bad.post("/v1/namespaces/team1/contexts/absent/revisions", {"id": "x"}))
    assert_malformed(bad.get("/v1/namespaces/team1/contexts/absent/audit?limit=0"))


def test_routes_outside_contexts_ignore_the_header(api: Api) -> None:
    resp = api.as_("not a subject").get("/healthz")
    assert resp.status_code == 200
    assert resp.text == '{"status":"ok"}'
    assert api.as_("not a subject").get("/v1/sandbox-pools").json() == {"items": []}
    resp = api.as_("not a subject").get("/v1/sandbox-pools/absent")
    assert resp.json() == {"error": "not_found", "message": "sandbox pool not found"}


def test_require_subject_answers_401_on_every_context_route(strict_api: Api) -> None:
    owner = strict_api.as_("user:alice")
    assert owner.post("/v1/contexts", context_body()).status_code == 201

    def probe(route: tuple[str, str, Any]) -> None:
        for header in (None, "", "   "):
            resp = strict_api.as_(header).request(route[0], route[1], route[2])
            assert resp.status_code == 401, (header, resp.text)
            assert resp.headers["content-type"] == "application/json"
            assert resp.text == UNAUTHENTICATED

    each(context_routes(), probe)
    assert owner.get(CTX).status_code == 200


def test_require_subject_still_checks_the_subject_first(strict_api: Api) -> None:
    resp = strict_api.as_(None).post("/v1/contexts", raw=b"")
    assert resp.status_code == 401
    assert resp.text == UNAUTHENTICATED
    assert_malformed(strict_api.as_("nobody").post("/v1/contexts", context_body()))


def test_require_subject_accepts_a_subject_and_ignores_health(strict_api: Api) -> None:
    resp = strict_api.as_("agent:summarizer").post("/v1/contexts", context_body())
    assert resp.status_code == 201
    listed = strict_api.as_("agent:summarizer").get("/v1/namespaces/team1/contexts").json()
    assert [c["name"] for c in listed["items"]] == ["research-memory"]
    assert strict_api.as_(None).get("/healthz").status_code == 200
    assert strict_api.as_(None).get("/v1/sandbox-pools").status_code == 200
    assert strict_api.as_(None).get("/no/such/route").status_code == 404
