"""Spec 1.9, 2.7 and 3.6: declared consumers, attach and detach."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from tests.api.conftest import Api, context_body, each, expect
from tests.support.api_helpers import grant

LIST = "/v1/namespaces/team1/contexts"
CTX = LIST + "/research-memory"
CONSUMERS = CTX + "/consumers"
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
REQUIRED = {"error": "invalid_request",
            "message": "consumer subject, kind, and name are required"}
MODE = {"error": "invalid_request",
        "message": "consumer accessMode must be readOnly or readWrite"}
RESOURCE_KEYS = ["name", "namespace", "type", "status", "storage", "attachment"]




def consumer(kind: str | None = "agent", name: str = "summarizer", mode: str = "readOnly",
             **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "name": name, "accessMode": mode, **extra}


def attach(api: Api, body: dict[str, Any]) -> Any:
    resp = api.put(CONSUMERS, body)
    assert resp.status_code == 200, resp.text
    return resp


def keys(api: Api) -> list[str]:
    return [f'{c["kind"]}/{c["name"]}' for c in api.get(CONSUMERS).json()["items"]]


@pytest.fixture
def ctx(api: Api) -> Api:
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", context_body()).status_code == 201
    return alice


def test_attach_records_a_declared_consumer(ctx: Api) -> None:
    resp = attach(ctx, consumer())
    assert list(resp.json()) == RESOURCE_KEYS
    items = ctx.get(CONSUMERS).json()["items"]
    assert len(items) == 1
    item = items[0]
    assert list(item) == ["subject", "kind", "name", "accessMode", "active", "desired", "since"]
    assert item["subject"] == {"kind": "user", "name": "alice"}
    assert (item["kind"], item["name"], item["accessMode"]) == ("agent", "summarizer", "readOnly")
    assert (item["active"], item["desired"]) == (False, True)
    assert item["since"].endswith("Z")
    assert ctx.get(CTX).json()["consumers"] == items
    assert ctx.get(LIST).json()["items"][0]["consumers"] == items


def test_empty_list_and_read_permission(ctx: Api) -> None:
    assert ctx.get(CONSUMERS).text == '{"items":[]}'
    grant(ctx, "agent:adm", "administer")
    grant(ctx, "agent:reader", "read")
    expect(ctx.as_("agent:adm").get(CONSUMERS), 404, NOT_FOUND)
    expect(ctx.as_("agent:none").get(CONSUMERS), 404, NOT_FOUND)
    expect(ctx.get(LIST + "/absent/consumers"), 404, NOT_FOUND)
    attach(ctx, consumer())
    assert ctx.as_("agent:reader").get(CONSUMERS).json()["items"][0]["name"] == "summarizer"


def test_consumers_are_sorted_by_the_kind_slash_name_string(ctx: Api) -> None:
    for kind, name in (("pod", "p2"), ("a", "z"), ("pod", "p10"), ("agent", "x"),
                       ("a-b", "a"), ("pod", "p1"), ("Pod", "q")):
        attach(ctx, consumer(kind, name))
    assert keys(ctx) == ["Pod/q", "a-b/a", "a/z", "agent/x", "pod/p1", "pod/p10", "pod/p2"]


def test_subject_defaults_to_the_caller(ctx: Api) -> None:
    bodies = [consumer(name="n1"), consumer(name="n2", subject=None),
              consumer(name="n3", subject={}), consumer(name="n4", subject={"kind": "",
                                                                            "name": ""}),
              consumer(name="n5", subject={"kind": None, "name": None})]
    for body in bodies:
        attach(ctx, body)
    subjects = [c["subject"] for c in ctx.get(CONSUMERS).json()["items"]]
    assert subjects == [{"kind": "user", "name": "alice"}] * 5


def test_since_and_desired_are_overwritten_and_active_kept(ctx: Api) -> None:
    attach(ctx, consumer(name="a", desired=False, since="2001-02-03T04:05:06Z", active=True))
    attach(ctx, consumer(name="b", active=False))
    attach(ctx, consumer(name="c", active=None))
    items = ctx.get(CONSUMERS).json()["items"]
    assert [(c["name"], c["active"], c["desired"]) for c in items] == [
        ("a", True, True), ("b", False, True), ("c", False, True)]
    assert all(datetime.fromisoformat(c["since"].replace("Z", "+00:00")).year >= 2024
               for c in items)


def test_since_must_still_be_a_timestamp(ctx: Api) -> None:
    resp = ctx.put(CONSUMERS, consumer(since="last tuesday"))
    assert resp.status_code == 400
    assert resp.json()["error"] == "invalid_request"
    assert ctx.get(CONSUMERS).json() == {"items": []}


def test_reattaching_replaces_the_declared_consumer(ctx: Api) -> None:
    grant(ctx, "agent:bot", "read", "attach")
    attach(ctx, consumer(name="x"))
    attach(ctx, consumer(name="x", mode="readWrite", active=True))
    items = ctx.get(CONSUMERS).json()["items"]
    assert [(c["accessMode"], c["active"]) for c in items] == [("readWrite", True)]
    attach(ctx.as_("agent:bot"), consumer(name="x"))
    items = ctx.get(CONSUMERS).json()["items"]
    assert [c["subject"]["name"] for c in items] == ["alice", "bot"]
    assert keys(ctx) == ["agent/x", "agent/x"]


def test_attaching_for_another_subject_needs_administer(ctx: Api) -> None:
    grant(ctx, "agent:bot", "read", "attach")
    bot = ctx.as_("agent:bot")
    other = consumer(subject={"kind": "agent", "name": "other"})
    expect(bot.put(CONSUMERS, other), 404, NOT_FOUND)
    expect(bot.delete(CONSUMERS, other), 404, NOT_FOUND)
    expect(bot.put(CONSUMERS, consumer(subject={"kind": "user", "name": "bot"})), 404, NOT_FOUND)
    attach(bot, consumer(subject={"kind": "agent", "name": "bot"}))
    attach(ctx, other)
    assert [c["subject"]["name"] for c in ctx.get(CONSUMERS).json()["items"]] == ["bot", "other"]


def test_attach_requires_attach_before_reading_the_body(ctx: Api) -> None:
    grant(ctx, "agent:reader", "read", "write", "derive", "administer")
    reader = ctx.as_("agent:reader")
    for method in ("PUT", "DELETE"):
        expect(reader.request(method, CONSUMERS, consumer()), 404, NOT_FOUND)
        expect(reader.request(method, CONSUMERS, raw=b""), 404, NOT_FOUND)
        expect(ctx.request(method, LIST + "/absent/consumers", raw=b"[]"), 404, NOT_FOUND)
    assert ctx.get(CONSUMERS).json() == {"items": []}


def test_attach_checks_in_the_documented_order(ctx: Api) -> None:
    grant(ctx, "agent:bot", "read", "attach")
    bot = ctx.as_("agent:bot")
    expect(bot.put(CONSUMERS, raw=b""), 400,
           {"error": "invalid_request", "message": "request body is required"})
    expect(bot.put(CONSUMERS, consumer(subject={"kind": "robot", "name": "x"}, mode="bad")),
           404, NOT_FOUND)
    expect(bot.put(CONSUMERS, consumer(subject={"kind": "agent", "name": ""})), 404, NOT_FOUND)
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
    each(steps, lambda step: expect(step[0].put(CONSUMERS, step[1]),
                                    404 if step[2] is NOT_FOUND else 400, step[2]))
    assert ctx.get(CONSUMERS).json() == {"items": []}


def test_read_write_needs_write(ctx: Api) -> None:
    grant(ctx, "agent:bot", "read", "attach")
    grant(ctx, "agent:writer", "read", "write", "attach")
    expect(ctx.as_("agent:bot").put(CONSUMERS, consumer(mode="readWrite")), 404, NOT_FOUND)
    attach(ctx.as_("agent:bot"), consumer(mode="readOnly"))
    attach(ctx.as_("agent:writer"), consumer(mode="readWrite"))
    modes = [(c["subject"]["name"], c["accessMode"])
             for c in ctx.get(CONSUMERS).json()["items"]]
    assert modes == [("bot", "readOnly"), ("writer", "readWrite")]


def test_consumer_kind_and_name_are_free_strings(ctx: Api) -> None:
    attach(ctx, consumer(kind="Some Kind", name="名前/with:colon"))
    assert keys(ctx) == ["Some Kind/名前/with:colon"]


def test_detach_removes_the_matching_consumer_only(ctx: Api) -> None:
    grant(ctx, "agent:bot", "read", "attach")
    attach(ctx, consumer(name="x"))
    attach(ctx, consumer(name="y"))
    attach(ctx.as_("agent:bot"), consumer(name="x"))
    resp = ctx.delete(CONSUMERS, {"kind": "agent", "name": "x"})
    assert resp.status_code == 200
    assert list(resp.json()) == RESOURCE_KEYS
    items = ctx.get(CONSUMERS).json()["items"]
    assert [(c["subject"]["name"], c["name"]) for c in items] == [("bot", "x"), ("alice", "y")]


def test_detach_ignores_access_mode_and_validates_the_rest(ctx: Api) -> None:
    attach(ctx, consumer(name="x"))
    assert ctx.delete(CONSUMERS, consumer(name="x", mode="nonsense")).status_code == 200
    expect(ctx.delete(CONSUMERS, {"kind": "agent"}), 400, REQUIRED)
    expect(ctx.delete(CONSUMERS, {"kind": "agent", "name": "x",
                                  "subject": {"kind": "robot", "name": "r"}}), 400, REQUIRED)
    resp = ctx.delete(CONSUMERS, {"kind": "agent", "name": "x", "unknown": 1})
    assert resp.status_code == 400
    assert ctx.get(CONSUMERS).json() == {"items": []}


def test_detaching_an_absent_consumer_succeeds_and_is_audited(ctx: Api) -> None:
    resp = ctx.delete(CONSUMERS, {"kind": "agent", "name": "ghost"})
    assert resp.status_code == 200
    events = ctx.get(CTX + "/audit").json()["items"]
    assert events[-1]["action"] == "consumer.detached"
    assert events[-1]["target"] == {"kind": "user", "name": "alice"}


def test_attach_and_detach_are_audited(ctx: Api) -> None:
    attach(ctx, consumer(subject={"kind": "service", "name": "team1/sa"}))
    assert ctx.delete(CONSUMERS, {"subject": {"kind": "service", "name": "team1/sa"},
                                  "kind": "agent", "name": "summarizer"}).status_code == 200
    events = ctx.get(CTX + "/audit").json()["items"][1:]
    alice, sa = {"kind": "user", "name": "alice"}, {"kind": "service", "name": "team1/sa"}
    assert [(e["action"], e["subject"], e["target"]) for e in events] == [
        ("consumer.attached", alice, sa), ("consumer.detached", alice, sa)]
    assert ctx.get(CONSUMERS).json() == {"items": []}


def test_in_use_lists_every_declared_consumer(ctx: Api) -> None:
    grant(ctx, "agent:bot", "read", "attach")
    attach(ctx, consumer(kind="sandbox", name="sb-0"))
    attach(ctx, consumer(name="x"))
    attach(ctx.as_("agent:bot"), consumer(name="x"))
    expect(ctx.delete(CTX), 409, {"error": "in_use", "message": (
        "context resource is in use: research-memory is used by agent/x, agent/x, sandbox/sb-0; "
        "detach consumers or use force deletion")})
    for body in (consumer(name="x"), consumer(kind="sandbox", name="sb-0")):
        assert ctx.delete(CONSUMERS, body).status_code == 200
    expect(ctx.delete(CTX), 409, {"error": "in_use", "message": (
        "context resource is in use: research-memory is used by agent/x; "
        "detach consumers or use force deletion")})
    assert ctx.as_("agent:bot").delete(CONSUMERS, consumer(name="x")).status_code == 200
    assert ctx.delete(CTX).status_code == 204
