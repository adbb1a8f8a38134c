"""Spec 1.1.5 and 8.3: the caller from ``X-Context-Subject`` (``CS_REQUIRE_SUBJECT``, a
setting of the service: test_subject_required.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.conftest import Api, context_body, each
from tests.api.namespaced import Namespaced, namespaced

# one service for the module: every test's contexts live in a namespace of its own
pytestmark = pytest.mark.shared_service
MALFORMED = "X-Context-Subject must be kind:name with kind user, agent, workload or service"
FULL = ["read", "write", "attach", "derive", "administer"]


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


def assert_malformed(resp: Any) -> None:
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"error": "invalid_request", "message": MALFORMED}


def context_routes(namespace: str) -> list[tuple[str, str, Any]]:
    """Every context route of ``research-memory`` in ``namespace``, with a body that would
    otherwise be acceptable."""
    ctx = f"/v1/namespaces/{namespace}/contexts/research-memory"
    grant = {"subject": {"kind": "agent", "name": "a"}, "permissions": ["read"]}
    revision = {"id": "a" * 64, "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"}
    return [
        ("POST", "/v1/contexts", context_body(name="other", namespace=namespace)),
        ("GET", f"/v1/namespaces/{namespace}/contexts", None),
        ("GET", ctx, None),
        ("GET", ctx + "/revisions", None),
        ("POST", ctx + "/revisions", revision),
        ("GET", ctx + "/grants", None),
        ("PUT", ctx + "/grants", grant),
        ("DELETE", ctx + "/grants", {"kind": "agent", "name": "a"}),
        ("GET", ctx + "/consumers", None),
        ("PUT", ctx + "/consumers", {"kind": "agent", "name": "a", "accessMode": "readOnly"}),
        ("DELETE", ctx + "/consumers", {"kind": "agent", "name": "a"}),
        ("GET", ctx + "/audit", None),
        ("DELETE", ctx, None),
    ]


def test_absent_header_is_user_anonymous(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    grants = api.as_("user:anonymous").get(api.context + "/grants").json()["items"]
    assert [g["subject"] for g in grants] == [{"kind": "user", "name": "anonymous"}]
    assert api.as_("user:alice").get(api.context).status_code == 404


def test_blank_header_counts_as_absent(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    for blank in ("", "   ", "\t"):
        resp = api.as_(blank).get(api.context)
        assert resp.status_code == 200, blank
        assert resp.json()["effectiveAccess"] == FULL


def test_surrounding_whitespace_is_trimmed(api: Namespaced) -> None:
    assert api.as_("  user:alice \t").post("/v1/contexts", api.context_body()).status_code == 201
    assert api.as_("user:alice").get(api.context).status_code == 200


def test_name_is_split_at_the_first_colon(api: Namespaced) -> None:
    for subject in ("user:github:alice", "service:team1/agent-sa", "workload:a:b/c"):
        name = subject.split(":", 1)[1].replace(":", "-").replace("/", "-")
        resp = api.as_(subject).post("/v1/contexts", api.context_body(name=name))
        assert resp.status_code == 201, resp.text
        kind, _, rest = subject.partition(":")
        audit = api.as_(subject).get(f"{api.contexts}/{name}/audit").json()
        assert audit["items"][0]["subject"] == {"kind": kind, "name": rest}
    assert api.as_("user:github").get(api.contexts).json() == {"items": []}


def test_every_kind_is_accepted(api: Namespaced) -> None:
    for kind in ("user", "agent", "workload", "service"):
        resp = api.as_(f"{kind}:x").post("/v1/contexts", api.context_body(name=kind))
        assert resp.status_code == 201, resp.text
        assert api.as_(f"{kind}:x").get(f"{api.contexts}/{kind}").status_code == 200


def test_malformed_headers_are_rejected(api: Namespaced) -> None:
    cases = ["alice", "user", "user:", ":alice", "user:   ", "  :alice", "User:alice",
             "USER:alice", "robot:alice", "users:alice", "user :alice", " user:", "group:x",
             "kind:name"]
    each(cases, lambda header: assert_malformed(
        api.as_(header).post("/v1/contexts", api.context_body())))
    assert api.get(api.contexts).json() == {"items": []}


def test_malformed_header_is_checked_on_every_context_route(api: Namespaced) -> None:
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    bad = api.as_("nobody")
    each(context_routes(api.ns), lambda r: assert_malformed(bad.request(r[0], r[1], r[2])))
    assert api.get(api.context).status_code == 200


def test_subject_is_evaluated_before_body_and_access(api: Namespaced) -> None:
    bad = api.as_("robot:x")
    assert_malformed(bad.post("/v1/contexts", raw=b""))
    assert_malformed(bad.post("/v1/contexts", raw=b"[1, 2"))
    assert_malformed(bad.post("/v1/contexts", raw=b" " * (2 * 1024 * 1024)))
    assert_malformed(bad.get(api.contexts + "/absent"))
    assert_malformed(bad.post(api.contexts + "/absent/revisions", {"id": "x"}))
    assert_malformed(bad.get(api.contexts + "/absent/audit?limit=0"))


def test_routes_outside_contexts_ignore_the_header(api: Namespaced) -> None:
    resp = api.as_("not a subject").get("/healthz")
    assert resp.status_code == 200
    assert resp.text == '{"status":"ok"}'
    assert api.as_("not a subject").get("/v1/sandbox-pools").json() == {"items": []}
    resp = api.as_("not a subject").get("/v1/sandbox-pools/absent")
    assert resp.json() == {"error": "not_found", "message": "sandbox pool not found"}
