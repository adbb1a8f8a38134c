"""Spec 1.10 and 3.7: the audit history, its paging and cursor rules."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import pytest

from tests.api.conftest import Api, context_body, each, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import fresh
from tests.support.api_helpers import grant as grant_to

# one service for the module: every test's context lives in a namespace of its own
pytestmark = pytest.mark.shared_service
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
BAD_LIMIT = {"error": "invalid_request", "message": "limit must be between 1 and 1000"}
BAD_CURSOR = {"error": "invalid_request", "message": "invalid audit cursor"}
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,5}[1-9])?Z$")


def audit(api: Namespaced) -> str:
    """The path of the audit of ``api``'s ``research-memory``."""
    return api.context + "/audit"


def grant(api: Namespaced, name: str, *permissions: str, path: str | None = None) -> None:
    """Grant the agent ``name`` (``read`` when no permission is named) on ``path``, by default
    ``api``'s ``research-memory``."""
    grant_to(api, f"agent:{name}", *(permissions or ("read",)), path=path or api.context)


def targets(page: dict[str, Any]) -> list[str]:
    return [e["target"]["name"] if "target" in e else e["action"] for e in page["items"]]


def page(api: Namespaced, query: str = "", path: str | None = None) -> dict[str, Any]:
    resp = api.get((path or audit(api)) + query)
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


@pytest.fixture
def ctx(api: Namespaced) -> Namespaced:
    """``research-memory`` in the test's namespace, owned by ``user:alice``."""
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", alice.context_body()).status_code == 201
    return alice


def test_events_render_in_key_order(ctx: Namespaced) -> None:
    grant(ctx, "summarizer", "read", "attach")
    resp = ctx.get(audit(ctx))
    assert resp.headers["content-type"] == "application/json"
    body = resp.json()
    assert list(body) == ["items"]
    created, granted = body["items"]
    assert list(created) == ["time", "action", "subject"]
    assert list(granted) == ["time", "action", "subject", "target"]
    assert TIMESTAMP.fullmatch(created["time"]) and TIMESTAMP.fullmatch(granted["time"])
    assert resp.text == json.dumps({"items": [
        {"time": created["time"], "action": "context.created",
         "subject": {"kind": "user", "name": "alice"}},
        {"time": granted["time"], "action": "grant.set",
         "subject": {"kind": "user", "name": "alice"},
         "target": {"kind": "agent", "name": "summarizer"}}]}, separators=(",", ":"))


def test_audit_records_only_the_five_actions_oldest_first(ctx: Namespaced) -> None:
    grant(ctx, "x")
    ctx.put(ctx.context + "/consumers", {"kind": "agent", "name": "a", "accessMode": "readOnly"})
    ctx.post(ctx.context + "/revisions", {"id": "a" * 64, "createdAt": "2026-01-01T00:00:00Z",
                                  "operation": "sync"})
    ctx.delete(ctx.context + "/consumers", {"kind": "agent", "name": "a"})
    ctx.delete(ctx.context + "/grants", {"kind": "agent", "name": "x"})
    ctx.get(ctx.context)
    ctx.get(ctx.context + "/grants")
    actions = [e["action"] for e in page(ctx)["items"]]
    assert actions == ["context.created", "grant.set", "consumer.attached", "consumer.detached",
                       "grant.revoked"]


def test_audit_requires_administer(ctx: Namespaced) -> None:
    grant(ctx, "rw", "read", "write", "attach", "derive")
    grant(ctx, "adm", "administer")
    expect(ctx.as_("agent:rw").get(audit(ctx)), 404, NOT_FOUND)
    expect(ctx.as_("agent:nobody").get(audit(ctx)), 404, NOT_FOUND)
    expect(ctx.get(ctx.contexts + "/absent/audit"), 404, NOT_FOUND)
    assert len(page(ctx.as_("agent:adm"))["items"]) == 3
    assert len(page(ctx.as_("service:context-service-admin"))["items"]) == 3


def test_the_history_is_complete_without_limit(ctx: Namespaced) -> None:
    for i in range(40):
        grant(ctx, f"a{i:02d}")
    body = page(ctx)
    assert "nextCursor" not in body
    assert targets(body) == ["context.created"] + [f"a{i:02d}" for i in range(40)]


def test_limit_must_be_an_integer_from_1_to_1000(ctx: Namespaced) -> None:
    bad = ["0", "1001", "-1", "abc", "1.5", "", " 5", "5 ", "1_0", "1e2", "0x10", "+",
           "99999999999999999999999", quote("٣"), "true"]
    each(bad, lambda limit: expect(ctx.get(f"{audit(ctx)}?limit={limit}"), 400, BAD_LIMIT))
    for limit in ("1", "1000", "0001"):
        assert len(page(ctx, f"?limit={limit}")["items"]) == 1


def test_limit_pages_with_next_cursor(ctx: Namespaced) -> None:
    for i in range(6):
        grant(ctx, f"a{i}")
    first = page(ctx, "?limit=3")
    assert list(first) == ["items", "nextCursor"]
    assert targets(first) == ["context.created", "a0", "a1"]
    second = page(ctx, f"?limit=3&cursor={first['nextCursor']}")
    assert targets(second) == ["a2", "a3", "a4"]
    third = page(ctx, f"?cursor={second['nextCursor']}&limit=3")
    assert targets(third) == ["a5"]
    assert "nextCursor" not in third


def test_an_exactly_full_last_page_has_no_cursor(ctx: Namespaced) -> None:
    for i in range(3):
        grant(ctx, f"a{i}")
    first = page(ctx, "?limit=2")
    second = page(ctx, f"?limit=2&cursor={first['nextCursor']}")
    assert targets(second) == ["a1", "a2"]
    assert "nextCursor" not in second
    assert "nextCursor" not in page(ctx, "?limit=4")
    assert "nextCursor" not in page(ctx, "?limit=1000")


def test_cursor_without_limit_returns_the_rest(ctx: Namespaced) -> None:
    for i in range(5):
        grant(ctx, f"a{i}")
    first = page(ctx, "?limit=2")
    rest = page(ctx, f"?cursor={first['nextCursor']}")
    assert targets(rest) == ["a1", "a2", "a3", "a4"]
    assert "nextCursor" not in rest


def test_cursors_stay_valid_as_events_are_added(ctx: Namespaced) -> None:
    grant(ctx, "a0")
    first = page(ctx, "?limit=1")
    cursor = first["nextCursor"]
    assert targets(page(ctx, f"?cursor={cursor}")) == ["a0"]
    for i in range(1, 4):
        grant(ctx, f"a{i}")
    assert targets(page(ctx, f"?cursor={cursor}")) == ["a0", "a1", "a2", "a3"]
    second = page(ctx, f"?cursor={cursor}&limit=2")
    assert targets(second) == ["a0", "a1"]
    assert page(ctx, f"?cursor={second['nextCursor']}&limit=5")["items"][-1]["target"]["name"] \
        == "a3"
    assert page(ctx, f"?cursor={cursor}&limit=2")["nextCursor"] == second["nextCursor"]


def test_garbage_cursors_are_invalid(ctx: Namespaced) -> None:
    for i in range(3):
        grant(ctx, f"a{i}")
    good = page(ctx, "?limit=1")["nextCursor"]
    bad = ["", "abc", "!!!", quote(good + "x"), good[:-2], "eyJzIjoxfQ", quote("{}"),
           "bnVsbA", "W10"]
    each(bad, lambda cursor: expect(ctx.get(f"{audit(ctx)}?cursor={cursor}"), 400, BAD_CURSOR))
    assert targets(page(ctx, f"?cursor={good}")) == ["a0", "a1", "a2"]


def test_cursor_of_another_context_is_invalid(api: Namespaced) -> None:
    team2 = fresh("team")
    contexts = ((api.ns, "research-memory"), (api.ns, "other"), (team2, "research-memory"))
    for ns, name in contexts:
        assert api.post("/v1/contexts", context_body(name=name, namespace=ns)).status_code == 201
        for i in range(3):
            grant(api, f"a{i}", path=f"/v1/namespaces/{ns}/contexts/{name}")
    other = page(api, "?limit=1", path=api.contexts + "/other/audit")["nextCursor"]
    elsewhere = page(api, "?limit=1",
                     path=f"/v1/namespaces/{team2}/contexts/research-memory/audit")["nextCursor"]
    expect(api.get(f"{audit(api)}?cursor={other}"), 400, BAD_CURSOR)
    expect(api.get(f"{audit(api)}?cursor={elsewhere}"), 400, BAD_CURSOR)


def test_cursor_of_a_deleted_generation_is_invalid(ctx: Namespaced) -> None:
    for i in range(3):
        grant(ctx, f"a{i}")
    old = page(ctx, "?limit=1")["nextCursor"]
    assert ctx.delete(ctx.context).status_code == 204
    assert ctx.post("/v1/contexts", ctx.context_body()).status_code == 201
    for i in range(3):
        grant(ctx, f"b{i}")
    expect(ctx.get(f"{audit(ctx)}?cursor={old}"), 400, BAD_CURSOR)
    assert targets(page(ctx)) == ["context.created", "b0", "b1", "b2"]


def test_checks_run_subject_administer_limit_cursor(ctx: Namespaced) -> None:
    stranger = ctx.as_("agent:stranger")
    expect(stranger.get(f"{audit(ctx)}?limit=0&cursor=bad"), 404, NOT_FOUND)
    expect(ctx.get(f"{ctx.contexts}/absent/audit?limit=0&cursor=bad"), 404, NOT_FOUND)
    expect(ctx.get(f"{audit(ctx)}?limit=0&cursor=bad"), 400, BAD_LIMIT)
    expect(ctx.get(f"{audit(ctx)}?limit=5&cursor=bad"), 400, BAD_CURSOR)
    resp = ctx.as_("bad header").get(f"{audit(ctx)}?limit=0")
    assert resp.status_code == 400
    assert resp.json()["message"].startswith("X-Context-Subject must be")


def test_audit_sees_each_write_immediately(ctx: Namespaced) -> None:
    for i in range(10):
        grant(ctx, f"a{i}")
        body = page(ctx, "?limit=1000")
        assert len(body["items"]) == i + 2
        assert body["items"][-1]["target"]["name"] == f"a{i}"
