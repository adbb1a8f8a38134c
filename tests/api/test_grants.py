"""Spec 1.8, 2.6 and 3: reading, setting and revoking grants."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from tests.api.conftest import Api, each, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import grant

# one service for the module: every test's context lives in a namespace of its own
pytestmark = pytest.mark.shared_service
FULL = ["read", "write", "attach", "derive", "administer"]
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
RESOURCE_KEYS = ["name", "namespace", "type", "status", "storage", "attachment"]
GRANT_MESSAGE = "grant requires a valid subject and permissions"
REVOKE_MESSAGE = "valid subject is required"


def invalid(message: str) -> dict[str, str]:
    return {"error": "invalid_request", "message": message}


def body_for(subject: str, *permissions: str) -> dict[str, Any]:
    kind, _, name = subject.partition(":")
    return {"subject": {"kind": kind, "name": name}, "permissions": list(permissions)}


def grants_path(api: Namespaced) -> str:
    """The path of the grants of ``api``'s ``research-memory``."""
    return api.context + "/grants"


def listed(api: Namespaced) -> list[tuple[str, list[str]]]:
    items = api.get(grants_path(api)).json()["items"]
    return [(f'{g["subject"]["kind"]}:{g["subject"]["name"]}', g["permissions"]) for g in items]


def parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@pytest.fixture
def ctx(api: Api) -> Namespaced:
    """``research-memory`` in a namespace of the test's own, owned by ``user:alice``."""
    alice = namespaced(api).as_("user:alice")
    assert alice.post("/v1/contexts", alice.context_body()).status_code == 201
    return alice


def test_owner_holds_one_full_grant(ctx: Namespaced) -> None:
    resp = ctx.get(grants_path(ctx))
    assert resp.status_code == 200
    items = resp.json()["items"]
    assert len(items) == 1
    assert list(items[0]) == ["subject", "permissions", "createdAt"]
    assert list(items[0]["subject"]) == ["kind", "name"]
    assert items[0]["subject"] == {"kind": "user", "name": "alice"}
    assert items[0]["permissions"] == FULL
    audit = ctx.get(ctx.context + "/audit").json()["items"]
    assert items[0]["createdAt"] == audit[0]["time"]


def test_grants_render_like_the_spec_example(ctx: Namespaced) -> None:
    grant(ctx, "agent:summarizer", "read", "attach", path=ctx.context)
    text = ctx.get(grants_path(ctx)).text
    stamps = [g["createdAt"] for g in json.loads(text)["items"]]
    assert text == (
        '{"items":[{"subject":{"kind":"agent","name":"summarizer"},"permissions":["read","attach"],'
        f'"createdAt":"{stamps[0]}"}},{{"subject":{{"kind":"user","name":"alice"}},'
        '"permissions":["read","write","attach","derive","administer"],'
        f'"createdAt":"{stamps[1]}"}}]}}')


def test_set_answers_the_resource_without_access_fields(ctx: Namespaced) -> None:
    ctx.put(ctx.context + "/consumers", {"kind": "agent", "name": "a", "accessMode": "readOnly"})
    resp = grant(ctx, "agent:x", "read", path=ctx.context)
    assert list(resp.json()) == RESOURCE_KEYS
    assert resp.headers["content-type"] == "application/json"


def test_grants_are_sorted_by_kind_and_name(ctx: Namespaced) -> None:
    for subject in ("workload:w", "user:bob", "service:team1/sa", "agent:zed", "user:a:b",
                    "user:a-b", "user:a/b", "agent:Zed", "user:aa"):
        grant(ctx, subject, "read", path=ctx.context)
    assert [s for s, _ in listed(ctx)] == [
        "agent:Zed", "agent:zed", "service:team1/sa", "user:a-b", "user:a/b", "user:a:b",
        "user:aa", "user:alice", "user:bob", "workload:w"]


def test_permissions_keep_the_client_order(ctx: Namespaced) -> None:
    grant(ctx, "agent:x", "administer", "derive", "read", "attach", "write", path=ctx.context)
    assert dict(listed(ctx))["agent:x"] == ["administer", "derive", "read", "attach", "write"]
    assert ctx.as_("agent:x").get(ctx.context).json()["effectiveAccess"] == FULL


def test_a_grant_replaces_the_previous_one_entirely(ctx: Namespaced) -> None:
    grant(ctx, "agent:x", "read", "write", "attach", path=ctx.context)
    first = ctx.get(grants_path(ctx)).json()["items"][0]["createdAt"]
    grant(ctx, "agent:x", "administer", path=ctx.context)
    grants = dict(listed(ctx))
    assert grants["agent:x"] == ["administer"]
    assert len(grants) == 2
    assert parse(ctx.get(grants_path(ctx)).json()["items"][0]["createdAt"]) >= parse(first)
    expect(ctx.as_("agent:x").get(ctx.context), 404, NOT_FOUND)
    assert ctx.as_("agent:x").get(grants_path(ctx)).status_code == 200


def test_sent_created_at_is_ignored_but_must_be_a_timestamp(ctx: Namespaced) -> None:
    body = {**body_for("agent:x", "read"), "createdAt": "2001-02-03T04:05:06Z"}
    assert ctx.put(grants_path(ctx), body).status_code == 200
    stamp = ctx.get(grants_path(ctx)).json()["items"][0]["createdAt"]
    assert parse(stamp).year >= 2024
    for bad in ("yesterday", "2001-02-03T04:05:06", ""):
        resp = ctx.put(grants_path(ctx), {**body_for("agent:y", "read"), "createdAt": bad})
        assert resp.status_code == 400, bad
        assert resp.json()["error"] == "invalid_request"
    assert [s for s, _ in listed(ctx)] == ["agent:x", "user:alice"]


def test_set_validation_messages_in_order(ctx: Namespaced) -> None:
    steps: list[tuple[dict[str, Any], str]] = [
        ({}, GRANT_MESSAGE),
        ({"permissions": ["read"]}, GRANT_MESSAGE),
        ({"subject": None, "permissions": ["read"]}, GRANT_MESSAGE),
        ({"subject": {}, "permissions": ["read"]}, GRANT_MESSAGE),
        ({"subject": {"kind": "user"}, "permissions": ["read"]}, GRANT_MESSAGE),
        (body_for("user:  ", "read"), GRANT_MESSAGE),
        (body_for("robot:x", "read"), GRANT_MESSAGE),
        (body_for("User:x", "read"), GRANT_MESSAGE),
        (body_for("user:x"), GRANT_MESSAGE),
        ({"subject": {"kind": "user", "name": "x"}}, GRANT_MESSAGE),
        ({"subject": {"kind": "user", "name": "x"}, "permissions": None}, GRANT_MESSAGE),
        (body_for("robot:x", "bogus", "bogus"), GRANT_MESSAGE),
        (body_for("user:x", "read", "own"), 'unsupported permission "own"'),
        (body_for("user:x", "Read"), 'unsupported permission "Read"'),
        (body_for("user:x", ""), 'unsupported permission ""'),
        (body_for("user:x", "read", "read", "nope"), 'unsupported permission "nope"'),
        (body_for("user:x", 're"ad'), 'unsupported permission "re\\"ad"'),
        (body_for("user:x", "a\\b\n"), 'unsupported permission "a\\\\b\\n"'),
        (body_for("user:x", "zoë"), 'unsupported permission "zoë"'),
        (body_for("user:x", "read", "read"), 'duplicate permission "read"'),
        (body_for("user:x", "write", "write"), 'duplicate permission "write"'),
        (body_for("user:x", "read", "attach", "derive", "attach"), 'duplicate permission "attach"'),
        (body_for("user:x", "write"), 'permission "write" requires read'),
        (body_for("user:x", "derive", "attach", "write"), 'permission "write" requires read'),
        (body_for("user:x", "derive", "attach", "administer"), 'permission "attach" requires read'),
        (body_for("user:x", "derive"), 'permission "derive" requires read'),
    ]
    each(steps, lambda step: expect(ctx.put(grants_path(ctx), step[0]), 400, invalid(step[1])))
    assert [s for s, _ in listed(ctx)] == ["user:alice"]


def test_set_body_must_be_well_formed(ctx: Namespaced) -> None:
    bad = [b"", b"[]", b'{"subject":{"kind":"user","name":"x"},"permissions":"read"}',
           b'{"subject":{"kind":"user","name":"x","extra":1},"permissions":["read"]}',
           b'{"subject":{"kind":"user","name":"x"},"permissions":["read"]} {}',
           b'{"subject":{"kind":"user","name":"x"},"permissions":[1]}']
    each(bad, lambda raw: expect_invalid(ctx.put(grants_path(ctx), raw=raw)))


def expect_invalid(resp: Any) -> None:
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"] == "invalid_request"


def test_administer_only_and_read_free_grants_are_accepted(ctx: Namespaced) -> None:
    grant(ctx, "agent:adm", "administer", path=ctx.context)
    grant(ctx, "agent:r", "read", path=ctx.context)
    assert dict(listed(ctx))["agent:adm"] == ["administer"]


def test_set_requires_administer_before_reading_the_body(ctx: Namespaced) -> None:
    grant(ctx, "agent:rw", "read", "write", "attach", "derive", path=ctx.context)
    path = grants_path(ctx)
    for caller in (ctx.as_("agent:rw"), ctx.as_("agent:none")):
        expect(caller.put(path, body_for("agent:rw", "read", "administer")), 404, NOT_FOUND)
        expect(caller.put(path, raw=b""), 404, NOT_FOUND)
        expect(caller.put(path, body_for("robot:x")), 404, NOT_FOUND)
        expect(caller.get(path), 404, NOT_FOUND)
    expect(ctx.put(ctx.contexts + "/absent/grants", raw=b"[]"), 404, NOT_FOUND)
    assert dict(listed(ctx))["agent:rw"] == ["read", "write", "attach", "derive"]


def test_administer_alone_manages_grants(ctx: Namespaced) -> None:
    grant(ctx, "agent:adm", "administer", path=ctx.context)
    adm = ctx.as_("agent:adm")
    grant(adm, "agent:new", "read", "write", path=ctx.context)
    assert adm.delete(grants_path(ctx), {"kind": "user", "name": "alice"}).status_code == 200
    assert [s for s, _ in listed(adm)] == ["agent:adm", "agent:new"]
    expect(ctx.get(grants_path(ctx)), 404, NOT_FOUND)


def test_subjects_match_exactly(ctx: Namespaced) -> None:
    grant(ctx, "user:Bob", "read", path=ctx.context)
    grant(ctx, "agent:bob", "read", path=ctx.context)
    expect(ctx.as_("user:bob").get(ctx.context), 404, NOT_FOUND)
    assert ctx.as_("user:Bob").get(ctx.context).status_code == 200
    grant(ctx, "user:github:carol", "read", path=ctx.context)
    assert ctx.as_("user:github:carol").get(ctx.context).json()["effectiveAccess"] == ["read"]
    expect(ctx.as_("user:github").get(ctx.context), 404, NOT_FOUND)


def test_grants_are_audited(ctx: Namespaced) -> None:
    grant(ctx, "agent:x", "read", path=ctx.context)
    assert ctx.delete(grants_path(ctx), {"kind": "agent", "name": "x"}).status_code == 200
    events = ctx.get(ctx.context + "/audit").json()["items"]
    assert [(e["action"], e["subject"], e.get("target")) for e in events] == [
        ("context.created", {"kind": "user", "name": "alice"}, None),
        ("grant.set", {"kind": "user", "name": "alice"}, {"kind": "agent", "name": "x"}),
        ("grant.revoked", {"kind": "user", "name": "alice"}, {"kind": "agent", "name": "x"}),
    ]


# --- revoke ---------------------------------------------------------------------------------------

def test_revoke_removes_the_grant(ctx: Namespaced) -> None:
    grant(ctx, "agent:x", "read", path=ctx.context)
    resp = ctx.delete(grants_path(ctx), {"kind": "agent", "name": "x"})
    assert resp.status_code == 200
    assert list(resp.json()) == RESOURCE_KEYS
    assert [s for s, _ in listed(ctx)] == ["user:alice"]
    expect(ctx.as_("agent:x").get(ctx.context), 404, NOT_FOUND)
    assert ctx.as_("agent:x").get(ctx.contexts).json() == {"items": []}


def test_revoking_an_absent_grant_is_not_found(ctx: Namespaced) -> None:
    grant(ctx, "agent:x", "read", path=ctx.context)
    for subject in ({"kind": "agent", "name": "y"}, {"kind": "user", "name": "x"},
                    {"kind": "agent", "name": "X"}):
        expect(ctx.delete(grants_path(ctx), subject), 404, NOT_FOUND)
    assert ctx.delete(grants_path(ctx), {"kind": "agent", "name": "x"}).status_code == 200
    expect(ctx.delete(grants_path(ctx), {"kind": "agent", "name": "x"}), 404, NOT_FOUND)
    actions = [e["action"] for e in ctx.get(ctx.context + "/audit").json()["items"]]
    assert actions == ["context.created", "grant.set", "grant.revoked"]


def test_revoke_decoding_failures_say_valid_subject_is_required(ctx: Namespaced) -> None:
    bad = [b"[]", b'"user:x"', b"{", b"null", b"{}", b'{"kind":"user"}', b'{"name":"x"}',
           b'{"kind":"robot","name":"x"}', b'{"kind":"user","name":"  "}', b'{"kind":1,"name":"x"}',
           b'{"kind":"user","name":"alice","extra":true}', b'{"kind":"user","name":"alice"} x',
           b'{"subject":{"kind":"user","name":"alice"}}', b'{"Kind":"user","name":"alice"}']
    path = grants_path(ctx)
    each(bad, lambda raw: expect(ctx.delete(path, raw=raw), 400, invalid(REVOKE_MESSAGE)))
    expect(ctx.delete(path, raw=b"  "), 400, invalid("request body is required"))
    expect(ctx.delete(path, raw=b'{"kind":"user","name":"alice"}' + b" " * 1048576), 400,
           invalid("request body too large"))
    assert [s for s, _ in listed(ctx)] == ["user:alice"]


def test_revoke_requires_administer_first(ctx: Namespaced) -> None:
    grant(ctx, "agent:rw", "read", "write", "attach", "derive", path=ctx.context)
    other = ctx.as_("agent:rw")
    expect(other.delete(grants_path(ctx), {"kind": "user", "name": "alice"}), 404, NOT_FOUND)
    expect(other.delete(grants_path(ctx), raw=b"[]"), 404, NOT_FOUND)
    expect(ctx.delete(ctx.contexts + "/absent/grants", raw=b""), 404, NOT_FOUND)


def test_owner_may_remove_itself_and_admin_restores(ctx: Namespaced) -> None:
    assert ctx.delete(grants_path(ctx), {"kind": "user", "name": "alice"}).status_code == 200
    for suffix in ("", "/grants", "/audit", "/revisions"):
        expect(ctx.get(ctx.context + suffix), 404, NOT_FOUND)
    admin = ctx.as_("service:context-service-admin")
    assert admin.get(grants_path(ctx)).text == '{"items":[]}'
    grant(admin, "user:alice", *FULL, path=ctx.context)
    assert ctx.get(ctx.context).json()["effectiveAccess"] == FULL


def test_each_write_is_visible_to_the_next_read(ctx: Namespaced) -> None:
    for i in range(8):
        grant(ctx, f"agent:a{i}", "read", path=ctx.context)
        assert f"agent:a{i}" in dict(listed(ctx))
        names = [c["name"] for c in ctx.as_(f"agent:a{i}").get(ctx.contexts).json()["items"]]
        assert names == ["research-memory"]
        assert ctx.get(ctx.context + "/audit").json()["items"][-1]["target"]["name"] == f"a{i}"
