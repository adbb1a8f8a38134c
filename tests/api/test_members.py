"""Workspace membership over HTTP (agent-context-api.md §3.2, §3.3)."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

from context_service import bootstrap
from context_service.domain.workspace.events import WorkspaceMemberSet
from tests.api.conftest import Api, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import fresh

# one service for the module: every test's workspace is a namespace of its own (``api.ns``)
pytestmark = pytest.mark.shared_service
ADMIN = "service:context-service-admin"
NOT_FOUND = {"error": "not_found", "message": "workspace not found"}
OWNER_RULE = {"error": "invalid_request", "message":
              "invalid workspace membership: only an owner can add, change or remove an owner"}
LAST_OWNER = {"error": "conflict",
              "message": "workspace membership conflict: a workspace keeps at least one owner"}


def members(api: Namespaced) -> str:
    """The path of the members of ``api``'s workspace."""
    return f"/v1/namespaces/{api.ns}/members"


def put(api: Namespaced, caller: str, subject: str, role: Any) -> Any:
    kind, _, name = subject.partition(":")
    return api.as_(caller).put(members(api),
                               {"subject": {"kind": kind, "name": name}, "role": role})


def roles(api: Namespaced) -> dict[str, str]:
    resp = api.as_(ADMIN).get(members(api))
    assert resp.status_code == 200, resp.text
    return {f"{m['subject']['kind']}:{m['subject']['name']}": m["role"]
            for m in resp.json()["items"]}


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a workspace of the test's own."""
    return namespaced(api, "acme")


def seed(api: Namespaced) -> None:
    assert put(api, ADMIN, "user:alice", "owner").status_code == 200
    assert put(api, "user:alice", "user:adam", "admin").status_code == 200
    assert put(api, "user:alice", "user:mia", "member").status_code == 200
    assert put(api, "user:alice", "user:vic", "viewer").status_code == 200


def test_bootstrap_admin_adds_the_first_member_and_is_never_listed(api: Namespaced) -> None:
    empty = api.as_(ADMIN).get(members(api))
    assert (empty.status_code, empty.json()) == (200, {"items": []})
    resp = put(api, ADMIN, "user:alice", "owner")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert list(body) == ["subject", "role", "since"]
    assert body["subject"] == {"kind": "user", "name": "alice"} and body["role"] == "owner"
    assert body["since"].endswith("Z")
    assert int(resp.headers["X-Context-Position"]) > 0
    listed = api.as_("user:alice").get(members(api)).json()["items"]
    assert listed == [body]
    assert put(api, ADMIN, ADMIN, "owner").status_code == 400  # never a member


def test_non_members_and_members_without_the_permission_see_no_workspace(api: Namespaced) -> None:
    expect(api.as_("user:alice").get(members(api)), 404, NOT_FOUND)
    expect(put(api, "user:alice", "user:alice", "owner"), 404, NOT_FOUND)
    seed(api)
    expect(api.as_("user:zed").get(members(api)), 404, NOT_FOUND)
    for caller in ("user:mia", "user:vic"):
        assert api.as_(caller).get(members(api)).status_code == 200  # context:read
        expect(put(api, caller, "user:new", "viewer"), 404, NOT_FOUND)
        expect(api.as_(caller).delete(members(api) + "/user:vic"), 404, NOT_FOUND)
    expect(api.as_("user:alice").get(f"/v1/namespaces/{fresh('other')}/members"), 404,
           NOT_FOUND)


def test_list_is_sorted_by_kind_and_name(api: Namespaced) -> None:
    seed(api)
    assert put(api, "user:alice", "agent:zz", "viewer").status_code == 200
    assert put(api, "user:alice", "service:team1/agent-sa", "viewer").status_code == 200
    items = api.as_("user:vic").get(members(api)).json()["items"]
    keys = [f"{m['subject']['kind']}:{m['subject']['name']}" for m in items]
    assert keys == sorted(keys) and keys[0] == "agent:zz"


def test_body_and_subject_rules_in_order(api: Namespaced) -> None:
    seed(api)
    alice = api.as_("user:alice")
    expect(alice.put(members(api), raw=b""), 400,
           {"error": "invalid_request", "message": "request body is required"})
    expect(alice.put(members(api), raw=b" " * (1024 * 1024 + 1)), 400,
           {"error": "invalid_request", "message": "request body too large"})
    assert alice.put(members(api), {"subject": {"kind": "user", "name": "x"}, "role": "member",
                               "extra": 1}).status_code == 400
    invalid = {"error": "invalid_request", "message": "member requires a valid subject and role"}
    for body in ({"role": "member"}, {"subject": {"kind": "user", "name": "x"}},
                 {"subject": {"kind": "robot", "name": "x"}, "role": "member"},
                 {"subject": {"kind": "user", "name": " "}, "role": "member"},
                 {"subject": {"kind": "user", "name": "x"}, "role": ""},
                 {"subject": {"kind": "user", "name": "x"}, "role": None}):
        expect(alice.put(members(api), body), 400, invalid)
    expect(put(api, "user:alice", "user:x", "Owner"), 400,
           {"error": "invalid_request", "message": 'unsupported role "Owner"'})
    expect(api.as_("user:alice").put(members(api), raw=b"{"), 400,
           api.as_("user:alice").put(members(api), raw=b"{").json())  # malformed JSON: 400


def test_admins_cannot_touch_owners(api: Namespaced) -> None:
    seed(api)
    expect(put(api, "user:adam", "user:new", "owner"), 400, OWNER_RULE)
    expect(put(api, "user:adam", "user:alice", "admin"), 400, OWNER_RULE)
    expect(api.as_("user:adam").delete(members(api) + "/user:alice"), 400, OWNER_RULE)
    assert put(api, "user:adam", "user:new", "admin").status_code == 200
    assert put(api, "user:adam", "user:mia", "viewer").status_code == 200
    assert roles(api)["user:alice"] == "owner"


def test_the_last_owner_stays(api: Namespaced) -> None:
    seed(api)
    expect(put(api, "user:alice", "user:alice", "admin"), 409, LAST_OWNER)
    expect(api.as_("user:alice").delete(members(api) + "/user:alice"), 409, LAST_OWNER)
    assert put(api, "user:alice", "user:bea", "owner").status_code == 200
    assert api.as_("user:bea").delete(members(api) + "/user:alice").status_code == 204
    expect(api.as_(ADMIN).delete(members(api) + "/user:bea"), 409, LAST_OWNER)
    assert roles(api) == {"user:bea": "owner", "user:adam": "admin", "user:mia": "member",
                          "user:vic": "viewer"}


def test_only_admins_is_a_valid_workspace(api: Namespaced) -> None:
    assert put(api, ADMIN, "user:adam", "admin").status_code == 200
    assert api.as_("user:adam").delete(members(api) + "/user:adam").status_code == 204
    assert roles(api) == {}


def test_setting_the_same_role_records_nothing(api: Namespaced) -> None:
    seed(api)
    first = api.as_(ADMIN).get(members(api)).json()["items"]
    again = put(api, "user:alice", "user:mia", "member")
    assert again.status_code == 200 and "X-Context-Position" not in again.headers
    assert again.json() == next(m for m in first if m["subject"]["name"] == "mia")
    changed = put(api, "user:alice", "user:mia", "viewer")
    assert changed.json()["since"] >= again.json()["since"]
    assert changed.json()["role"] == "viewer"


def test_delete_path_segment_rules(api: Namespaced) -> None:
    seed(api)
    alice = api.as_("user:alice")
    assert put(api, "user:alice", "service:team1/agent-sa", "viewer").status_code == 200
    assert put(api, "user:alice", "user:github:bob", "viewer").status_code == 200
    assert alice.delete(members(api) + "/service:team1%2Fagent-sa").status_code == 204
    assert alice.delete(members(api) + "/user:github%3Abob").status_code == 204
    expect(alice.delete(members(api) + "/service:team1/agent-sa"), 404,
           {"error": "not_found", "message": "route not found"})
    for bad in ("nocolon", "robot:x", "user:", ":x"):
        expect(alice.delete(members(api) + "/" + bad), 400,
               {"error": "invalid_request", "message": "valid subject is required"})
    expect(alice.delete(members(api) + "/user:ghost"), 404,
           {"error": "not_found", "message": "workspace member not found"})
    assert "service:team1/agent-sa" not in roles(api)


def test_two_admins_changing_the_same_member_lose_no_update(
        api: Namespaced, container: bootstrap.Container) -> None:
    seed(api)
    assert put(api, "user:alice", "user:ann", "admin").status_code == 200
    targets = [f"user:m{i}" for i in range(12)]

    def change(args: tuple[str, str, str]) -> int:
        caller, subject, role = args
        return int(put(api, caller, subject, role).status_code)

    jobs = [("user:adam", t, "member") for t in targets] + \
           [("user:ann", t, "viewer") for t in targets]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert set(pool.map(change, jobs)) == {200}
    final = roles(api)
    assert len(final) == 5 + len(targets)
    events = [r.event for r in container.store.read(0, 100_000)
              if r.stream.namespace == api.ns and isinstance(r.event, WorkspaceMemberSet)
              and r.event.subject.name[0] == "m" and r.event.subject.name[1:].isdigit()]
    # each target: created by one admin, changed by the other; the last event names the role
    assert len(events) == 2 * len(targets)
    for target in targets:
        mine = [e for e in events if e.subject.key == target]
        assert [e.previous_role for e in mine] == ["", mine[0].role]
        assert final[target] == mine[-1].role


def test_any_character_in_names_and_namespaces_keeps_the_views_going(api: Namespaced) -> None:
    """NUL and other odd characters cannot be stored as PostgreSQL text: the views keep them as
    bytes, so no input can stop a projection."""
    odd = "/v1/namespaces/a%00b/members"
    assert api.as_(ADMIN).put(odd, {"subject": {"kind": "user", "name": "x\u0000y"},
                                    "role": "owner"}).status_code == 200
    assert put(api, ADMIN, "user:alice", "owner").status_code == 200
    assert put(api, "user:alice", "user:\u00e9\u0000\U0001f600", "viewer").status_code == 200
    listed = api.as_(ADMIN).get(odd)
    assert listed.status_code == 200, listed.text
    assert listed.json()["items"][0]["subject"]["name"] == "x\u0000y"
    names = [m["subject"]["name"] for m in api.as_("user:alice").get(members(api)).json()["items"]]
    assert names == ["alice", "\u00e9\u0000\U0001f600"]
    created = api.as_(ADMIN).post("/api/w/a%00b/agent-credentials", {
        "name": "n\u0000", "scopes": ["context:read"], "expiresInDays": 1})
    assert created.status_code == 201, created.text
    listed = api.as_(ADMIN).get("/api/w/a%00b/agent-credentials")
    assert listed.status_code == 200 and listed.json()["items"][0]["name"] == "n\u0000"
