"""Spec 1.9, 2.7 and 3.6: declared consumers, attach and detach."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.api.conftest import Api, each, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import grant

# one service for the module: every test's context lives in a namespace of its own
pytestmark = pytest.mark.shared_service
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
REQUIRED = {"error": "invalid_request",
            "message": "consumer subject, kind, and name are required"}
MODE = {"error": "invalid_request",
        "message": "consumer accessMode must be readOnly or readWrite"}
RESOURCE_KEYS = ["name", "namespace", "type", "status", "storage", "attachment"]


def consumer(kind: str | None = "agent", name: str = "summarizer", mode: str = "readOnly",
             **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "accessMode": mode, **extra}


def consumers(api: Namespaced) -> str:
    """The path of the consumers of ``api``'s ``research-memory``."""
    return api.context + "/consumers"


def attach(api: Namespaced, body: dict[str, Any]) -> Any:
    resp = api.put(consumers(api), body)
    assert resp.status_code == 200, resp.text
    return resp


def keys(api: Namespaced) -> list[str]:
    return [f'{c["kind"]}/{c["name"]}' for c in api.get(consumers(api)).json()["items"]]


@pytest.fixture
def ctx(api: Api) -> Namespaced:
    """``research-memory`` in a namespace of the test's own, owned by ``user:alice``."""
    alice = namespaced(api).as_("user:alice")
    assert alice.post("/v1/contexts", alice.context_body()).status_code == 201
    return alice


def test_attach_records_a_declared_consumer(ctx: Namespaced) -> None:
    resp = attach(ctx, consumer())
    assert list(resp.json()) == RESOURCE_KEYS
    items = ctx.get(consumers(ctx)).json()["items"]
    assert len(items) == 1
    item = items[0]
    assert list(item) == ["subject", "kind", "name", "accessMode", "active", "desired", "since"]
    assert item["subject"] == {"kind": "user", "name": "alice"}
    assert (item["kind"], item["name"], item["accessMode"]) == ("agent", "summarizer", "readOnly")
    assert (item["active"], item["desired"]) == (False, True)
    assert item["since"].endswith("Z")
    assert ctx.get(ctx.context).json()["consumers"] == items
    assert ctx.get(ctx.contexts).json()["items"][0]["consumers"] == items


def test_empty_list_and_read_permission(ctx: Namespaced) -> None:
    assert ctx.get(consumers(ctx)).text == '{"items":[]}'
    grant(ctx, "agent:adm", "administer", path=ctx.context)
    grant(ctx, "agent:reader", "read", path=ctx.context)
    expect(ctx.as_("agent:adm").get(consumers(ctx)), 404, NOT_FOUND)
    expect(ctx.as_("agent:none").get(consumers(ctx)), 404, NOT_FOUND)
    expect(ctx.get(ctx.contexts + "/absent/consumers"), 404, NOT_FOUND)
    attach(ctx, consumer())
    assert ctx.as_("agent:reader").get(consumers(ctx)).json()["items"][0]["name"] == "summarizer"


def test_consumers_are_sorted_by_the_kind_slash_name_string(ctx: Namespaced) -> None:
    for kind, name in (("pod", "p2"), ("a", "z"), ("pod", "p10"), ("agent", "x"),
                       ("a-b", "a"), ("pod", "p1"), ("Pod", "q")):
        attach(ctx, consumer(kind, name))
    assert keys(ctx) == ["Pod/q", "a-b/a", "a/z", "agent/x", "pod/p1", "pod/p10", "pod/p2"]


def test_subject_defaults_to_the_caller(ctx: Namespaced) -> None:
    bodies = [consumer(name="n1"), consumer(name="n2", subject=None),
              consumer(name="n3", subject={}), consumer(name="n4", subject={"kind": "",
                                                                            "name": ""}),
              consumer(name="n5", subject={"kind": None, "name": None})]
    for body in bodies:
        attach(ctx, body)
    subjects = [c["subject"] for c in ctx.get(consumers(ctx)).json()["items"]]
    assert subjects == [{"kind": "user", "name": "alice"}] * 5


def test_since_and_desired_are_overwritten_and_active_kept(ctx: Namespaced) -> None:
    attach(ctx, consumer(name="a", desired=False, since="2001-02-03T04:05:06Z", active=True))
    attach(ctx, consumer(name="b", active=False))
    attach(ctx, consumer(name="c", active=None))
    items = ctx.get(consumers(ctx)).json()["items"]
    assert [(c["name"], c["active"], c["desired"]) for c in items] == [
        ("a", True, True), ("b", False, True), ("c", False, True)]
    assert all(datetime.fromisoformat(c["since"].replace("Z", "+00:00")).year >= 2024
               for c in items)


def test_since_must_still_be_a_timestamp(ctx: Namespaced) -> None:
    resp = ctx.put(consumers(ctx), consumer(since="last tuesday"))
    assert resp.status_code == 400
    assert resp.json()["error"] == "invalid_request"
    assert ctx.get(consumers(ctx)).json() == {"items": []}


def test_reattaching_replaces_the_declared_consumer(ctx: Namespaced) -> None:
    grant(ctx, "agent:bot", "read", "attach", path=ctx.context)
    attach(ctx, consumer(name="x"))
    attach(ctx, consumer(name="x", mode="readWrite", active=True))
    items = ctx.get(consumers(ctx)).json()["items"]
    assert [(c["accessMode"], c["active"]) for c in items] == [("readWrite", True)]
    attach(ctx.as_("agent:bot"), consumer(name="x"))
    items = ctx.get(consumers(ctx)).json()["items"]
    assert [c["subject"]["name"] for c in items] == ["alice", "bot"]
    assert keys(ctx) == ["agent/x", "agent/x"]


def test_attaching_for_another_subject_needs_administer(ctx: Namespaced) -> None:
    grant(ctx, "agent:bot", "read", "attach", path=ctx.context)
    bot = ctx.as_("agent:bot")
    other = consumer(subject={"kind": "agent", "name": "other"})
    expect(bot.put(consumers(ctx), other), 404, NOT_FOUND)
    expect(bot.delete(consumers(ctx), other), 404, NOT_FOUND)
    expect(bot.put(consumers(ctx), consumer(subject={"kind": "user", "name": "bot"})), 404,
           NOT_FOUND)
    attach(bot, consumer(subject={"kind": "agent", "name": "bot"}))
    attach(ctx, other)
    items = ctx.get(consumers(ctx)).json()["items"]
    assert [c["subject"]["name"] for c in items] == ["bot", "other"]


def test_attach_requires_attach_before_reading_the_body(ctx: Namespaced) -> None:
    grant(ctx, "agent:reader", "read", "write", "derive", "administer", path=ctx.context)
    reader = ctx.as_("agent:reader")
    for method in ("PUT", "DELETE"):
        expect(reader.request(method, consumers(ctx), consumer()), 404, NOT_FOUND)
        expect(reader.request(method, consumers(ctx), raw=b""), 404, NOT_FOUND)
        expect(ctx.request(method, ctx.contexts + "/absent/consumers", raw=b"[]"), 404, NOT_FOUND)
    assert ctx.get(consumers(ctx)).json() == {"items": []}


def test_attach_checks_in_the_documented_order(ctx: Namespaced) -> None:
    grant(ctx, "agent:bot", "read", "attach", path=ctx.context)
    bot = ctx.as_("agent:bot")
    expect(bot.put(consumers(ctx), raw=b""), 400,
           {"error": "invalid_request", "message": "request body is required"})
    expect(bot.put(consumers(ctx), consumer(subject={"kind": "robot", "name": "x"}, mode="bad")),
           404, NOT_FOUND)
    expect(bot.put(consumers(ctx), consumer(subject={"kind": "agent", "name": ""})), 404, NOT_FOUND)
    steps = [
        (ctx, consumer(subject={"kind": "robot", "name": "x"}, mode="bad"), REQUIRED),
        (ctx, consumer(subject={"kind": "agent", "name": " "}), REQUIRED),
        (ctx, consumer(subject={"kind": "", "name": "x"}), REQUIRED),
        (ctx, consumer(kind="", mode="bad"), REQUIRED),
        (ctx, consumer(name="", mode="bad"), REQUIRED),
        (ctx, {"accessMode": "readOnly"}, REQUIRED),
        (bot, consumer(kind=None, mode="readWrite"), REQUIRED),
        (ctx, consumer(mode="bad"), MODE),
        (ctx, consumer(mode="ReadOnly"), MODE),
        (ctx, consumer(mode=""), MODE),
        (ctx, {"kind": "agent", "name": "x"}, MODE),
        (bot, consumer(mode="readwrite"), MODE),
        (bot, consumer(mode="readWrite"), NOT_FOUND),
    ]
    each(steps, lambda step: expect(step[0].put(consumers(ctx), step[1]),
                                    404 if step[2] is NOT_FOUND else 400, step[2]))
    assert ctx.get(consumers(ctx)).json() == {"items": []}


def test_read_write_needs_write(ctx: Namespaced) -> None:
    grant(ctx, "agent:bot", "read", "attach", path=ctx.context)
    grant(ctx, "agent:writer", "read", "write", "attach", path=ctx.context)
    expect(ctx.as_("agent:bot").put(consumers(ctx), consumer(mode="readWrite")), 404, NOT_FOUND)
    attach(ctx.as_("agent:bot"), consumer(mode="readOnly"))
    attach(ctx.as_("agent:writer"), consumer(mode="readWrite"))
    modes = [(c["subject"]["name"], c["accessMode"])
             for c in ctx.get(consumers(ctx)).json()["items"]]
    assert modes == [("bot", "readOnly"), ("writer", "readWrite")]


def test_consumer_kind_and_name_are_free_strings(ctx: Namespaced) -> None:
    attach(ctx, consumer(kind="Some Kind", name="名前/with:colon"))
    assert keys(ctx) == ["Some Kind/名前/with:colon"]


def test_detach_removes_the_matching_consumer_only(ctx: Namespaced) -> None:
    grant(ctx, "agent:bot", "read", "attach", path=ctx.context)
    attach(ctx, consumer(name="x"))
    attach(ctx, consumer(name="y"))
    attach(ctx.as_("agent:bot"), consumer(name="x"))
    resp = ctx.delete(consumers(ctx), {"kind": "agent", "name": "x"})
    assert resp.status_code == 200
    assert list(resp.json()) == RESOURCE_KEYS
    items = ctx.get(consumers(ctx)).json()["items"]
    assert [(c["subject"]["name"], c["name"]) for c in items] == [("bot", "x"), ("alice", "y")]


def test_detach_ignores_access_mode_and_validates_the_rest(ctx: Namespaced) -> None:
    attach(ctx, consumer(name="x"))
    assert ctx.delete(consumers(ctx), consumer(name="x", mode="nonsense")).status_code == 200
    expect(ctx.delete(consumers(ctx), {"kind": "agent"}), 400, REQUIRED)
    expect(ctx.delete(consumers(ctx), {"kind": "agent", "name": "x",
                                  "subject": {"kind": "robot", "name": "r"}}), 400, REQUIRED)
    resp = ctx.delete(consumers(ctx), {"kind": "agent", "name": "x", "unknown": 1})
    assert resp.status_code == 400
    assert ctx.get(consumers(ctx)).json() == {"items": []}


def test_detaching_an_absent_consumer_succeeds_and_is_audited(ctx: Namespaced) -> None:
    resp = ctx.delete(consumers(ctx), {"kind": "agent", "name": "ghost"})
    assert resp.status_code == 200
    events = ctx.get(ctx.context + "/audit").json()["items"]
    assert events[-1]["action"] == "consumer.detached"
    assert events[-1]["target"] == {"kind": "user", "name": "alice"}


def test_attach_and_detach_are_audited(ctx: Namespaced) -> None:
    attach(ctx, consumer(subject={"kind": "service", "name": "team1/sa"}))
    assert ctx.delete(consumers(ctx), {"subject": {"kind": "service", "name": "team1/sa"},
                                  "kind": "agent", "name": "summarizer"}).status_code == 200
    events = ctx.get(ctx.context + "/audit").json()["items"][1:]
    alice, sa = {"kind": "user", "name": "alice"}, {"kind": "service", "name": "team1/sa"}
    assert [(e["action"], e["subject"], e["target"]) for e in events] == [
        ("consumer.attached", alice, sa), ("consumer.detached", alice, sa)]
    assert ctx.get(consumers(ctx)).json() == {"items": []}


def test_in_use_lists_every_declared_consumer(ctx: Namespaced) -> None:
    grant(ctx, "agent:bot", "read", "attach", path=ctx.context)
    attach(ctx, consumer(kind="sandbox", name="sb-0"))
    attach(ctx, consumer(name="x"))
    attach(ctx.as_("agent:bot"), consumer(name="x"))
    expect(ctx.delete(ctx.context), 409, {"error": "in_use", "message": (
        "context resource is in use: research-memory is used by agent/x, agent/x, sandbox/sb-0; "
        "detach consumers or use force deletion")})
    for body in (consumer(name="x"), consumer(kind="sandbox", name="sb-0")):
        assert ctx.delete(consumers(ctx), body).status_code == 200
    expect(ctx.delete(ctx.context), 409, {"error": "in_use", "message": (
        "context resource is in use: research-memory is used by agent/x; "
        "detach consumers or use force deletion")})
    assert ctx.as_("agent:bot").delete(consumers(ctx), consumer(name="x")).status_code == 200
    assert ctx.delete(ctx.context).status_code == 204
