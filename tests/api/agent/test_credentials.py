"""Agent credential management over HTTP (agent-context-api.md §4.1-§4.3), each test in a
workspace of its own on the module's one service; the tests changing the service's subject rule
or clock are in test_credentials_service_wide.py."""

from __future__ import annotations

import concurrent.futures
import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from context_service import bootstrap
from tests.api.agent.conftest import probe
from tests.api.agent.workspace_namespaced import create
from tests.api.agent.workspace_namespaced import owner as owner  # the fixture
from tests.api.conftest import each, expect
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import credentials
from tests.support.api_helpers import ADMIN, add_member, fresh

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]

TOKEN = re.compile(r"^bdk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$")
KEYS = ["id", "name", "scopes", "createdBy", "createdAt", "expiresAt", "status"]


def parse(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00"))


def details(resp: Any) -> list[dict[str, str]]:
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["code"] == "VALIDATION_ERROR" and body["message"] == "request validation failed"
    return list(body["details"])


def test_create_answers_the_credential_and_its_token_once(owner: Namespaced) -> None:
    path = credentials(owner)
    resp = create(owner, name="research agent", scopes=["queries:run", "context:read"],
                  expiresInDays=90)
    assert resp.status_code == 201, resp.text
    assert resp.headers["Cache-Control"] == "no-store"
    assert int(resp.headers["X-Context-Position"]) > 0
    body = resp.json()
    assert list(body) == [*KEYS, "token"]
    assert re.fullmatch(r"[0-9a-f]{16}", body["id"])
    assert TOKEN.match(body["token"]) and body["token"].startswith(f"bdk_{body['id']}_")
    assert body["scopes"] == ["context:read", "queries:run"]  # canonical order
    assert body["createdBy"] == "user:alice" and body["status"] == "active"
    assert parse(body["expiresAt"]) - parse(body["createdAt"]) == timedelta(days=90)
    read = owner.as_("user:adam").get(f"{path}/{body['id']}")
    assert read.status_code == 200 and "token" not in read.json()
    assert read.json() == {k: v for k, v in body.items() if k != "token"}
    assert read.headers["Cache-Control"] == "no-store"


def test_field_rules_report_every_violation(owner: Namespaced) -> None:
    path = credentials(owner)
    assert details(owner.as_("user:alice").post(path, {})) == [
        {"path": "$.name", "message": "is required"},
        {"path": "$.scopes", "message": "is required"},
        {"path": "$.expiresInDays", "message": "is required"}]
    got = details(create(owner, name="  ", scopes=["context:read", "admin", "context:read"],
                         expiresInDays=0, contextSetId=""))
    assert got == [{"path": "$.name", "message": "must not be blank"},
                   {"path": "$.scopes[1]", "message": "must be context:read or queries:run"},
                   {"path": "$.scopes[2]", "message": "is a duplicate"},
                   {"path": "$.expiresInDays", "message": "must be between 1 and 365"},
                   {"path": "$.contextSetId", "message": "must not be empty"}]
    assert details(create(owner, name="x" * 101, scopes=[], expiresInDays=366)) == [
        {"path": "$.name", "message": "must be 1 to 100 characters"},
        {"path": "$.scopes", "message": "must not be empty"},
        {"path": "$.expiresInDays", "message": "must be between 1 and 365"}]
    edges: list[dict[str, Any]] = [{"name": "x" * 100, "expiresInDays": 1},
                                   {"name": "é" * 100, "expiresInDays": 365}]
    for edge in edges:
        assert create(owner, **edge).status_code == 201
    assert details(create(owner, contextSetId="missing")) == [
        {"path": "$.contextSetId", "message": "must name an active context set"}]
    assert create(owner, name=None, expiresInDays=None).status_code == 400  # null = absent


def test_bodies_that_cannot_be_decoded(owner: Namespaced, container: bootstrap.Container) -> None:
    path = credentials(owner)
    alice = owner.as_("user:alice")
    head = container.store.head()

    def invalid(raw: bytes) -> None:
        resp = alice.post(path, raw=raw)
        assert resp.status_code == 400, resp.text
        assert resp.json()["code"] == "INVALID_REQUEST", resp.text
        assert list(resp.json()) == ["code", "message"]

    each([b"[]", b'"x"', b"{", b'{"name":"a"} {}', b'{"unknown":1}', b'{"name":1}',
          b'{"expiresInDays":3.0}', b'{"expiresInDays":"3"}', b'{"scopes":"context:read"}',
          b'{"scopes":[true]}', b'{"expiresInDays":true}', b'{"Name":"a"}'], invalid)
    expect(alice.post(path, raw=b" \n"), 400,
           {"code": "INVALID_REQUEST", "message": "request body is required"})
    expect(alice.post(path, raw=b" " * (1024 * 1024 + 1)), 400,
           {"code": "INVALID_REQUEST", "message": "request body too large"})
    assert "at $.budget" not in alice.post(path, raw=b'{"foo":1}').json()["message"]
    assert alice.post(path, raw=b'{"foo":1}').json()["message"] == \
        'unknown field "foo" at $'
    for bad in ({"name": "x", "scopes": ["context:read"], "expiresInDays": 0},
                {"name": "x", "scopes": ["context:read"], "expiresInDays": 1,
                 "contextSetId": "nope"}):
        assert alice.post(path, bad).status_code == 400
    assert container.store.head() == head  # nothing was recorded


def test_who_may_manage_credentials(owner: Namespaced) -> None:
    path = credentials(owner)
    not_found = {"code": "NOT_FOUND", "message": "workspace not found"}
    forbidden = {"code": "FORBIDDEN",
                 "message": 'permission "agent_credential:manage" is required'}
    for caller in ("user:zed", "user:anonymous"):
        expect(create(owner, caller), 404, not_found)
        expect(owner.as_(caller).get(path), 404, not_found)
    for caller in ("user:mia", "user:vic"):
        expect(create(owner, caller), 403, forbidden)
        expect(owner.as_(caller).get(path), 403, forbidden)
        expect(owner.as_(caller).get(path + "/0123456789abcdef"), 403, forbidden)
        expect(owner.as_(caller).delete(path + "/0123456789abcdef"), 403, forbidden)
    assert create(owner, "user:adam").status_code == 201
    assert create(owner, ADMIN).status_code == 201
    assert create(owner, ADMIN, ws=fresh("no-members")).status_code == 201
    # the permission check comes before the body is read
    expect(owner.as_("user:vic").post(path, raw=b"nonsense"), 403, forbidden)


def test_list_is_newest_first_with_every_status(owner: Namespaced) -> None:
    path = credentials(owner)
    ids = [create(owner, name=f"c{i}").json()["id"] for i in range(4)]
    assert owner.as_("user:alice").delete(f"{path}/{ids[1]}").status_code == 204
    items = owner.as_("user:adam").get(path).json()["items"]
    assert [i["name"] for i in items] == ["c3", "c2", "c1", "c0"]
    revoked = next(i for i in items if i["id"] == ids[1])
    assert revoked["status"] == "revoked" and revoked["revokedBy"] == "user:alice"
    assert list(revoked) == [*KEYS, "revokedAt", "revokedBy"]
    assert all("token" not in i for i in items)
    assert owner.as_(ADMIN).get(f"/api/w/{fresh('other')}/agent-credentials").json() == \
        {"items": []}


def test_read_and_revoke_only_this_workspaces_credentials(owner: Namespaced) -> None:
    path = credentials(owner)
    other = create(owner, ADMIN, ws=fresh("other")).json()["id"]
    missing = {"code": "NOT_FOUND", "message": "agent credential not found"}
    expect(owner.as_("user:alice").get(f"{path}/{other}"), 404, missing)
    expect(owner.as_("user:alice").delete(f"{path}/{other}"), 404, missing)
    expect(owner.as_("user:alice").get(f"{path}/nope"), 404, missing)
    mine = create(owner).json()["id"]
    first = owner.as_("user:adam").delete(f"{path}/{mine}")
    assert first.status_code == 204 and first.content == b""
    assert int(first.headers["X-Context-Position"]) > 0
    again = owner.as_("user:adam").delete(f"{path}/{mine}")
    assert again.status_code == 204 and "X-Context-Position" not in again.headers
    assert again.headers["Cache-Control"] == "no-store"


def test_fifty_active_credentials_at_most(owner: Namespaced) -> None:
    path = credentials(owner)
    ids = [create(owner, name=f"c{i}").json()["id"] for i in range(50)]
    assert len(set(ids)) == 50
    limit = {"code": "AGENT_CREDENTIAL_LIMIT_REACHED",
             "message": "workspace already has 50 active agent credentials",
             "details": {"limit": 50}}
    expect(create(owner), 409, limit)
    assert create(owner, ws=fresh("other"), caller=ADMIN).status_code == 201  # per workspace
    assert owner.as_("user:alice").delete(f"{path}/{ids[0]}").status_code == 204
    assert create(owner).status_code == 201
    expect(create(owner), 409, limit)


def test_sixty_concurrent_creates_give_exactly_fifty(owner: Namespaced) -> None:
    path = credentials(owner)
    def one(i: int) -> int:
        return int(create(owner, name=f"c{i}").status_code)

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        codes = list(pool.map(one, range(60)))
    assert codes.count(201) == 50 and codes.count(409) == 10, codes
    items = owner.as_("user:alice").get(path).json()["items"]
    assert len(items) == 50


def test_credentials_of_former_members_stay_active_and_count(owner: Namespaced) -> None:
    path = credentials(owner)
    add_member(owner, "user:ann", "admin", caller="user:alice", ws=owner.ns)
    for i in range(50):
        assert create(owner, "user:ann", name=f"c{i}").status_code == 201
    members = f"/v1/namespaces/{owner.ns}/members"
    assert owner.as_("user:alice").delete(f"{members}/user:ann").status_code == 204
    assert create(owner).status_code == 409
    statuses = {i["status"] for i in owner.as_("user:alice").get(path).json()["items"]}
    assert statuses == {"active"}


def test_api_routing_errors(owner: Namespaced) -> None:
    path = credentials(owner)
    resp = owner.client.get("/api/agent/v1/nothing-here")
    expect(resp, 404, {"code": "NOT_FOUND", "message": "route not found"})
    assert resp.headers["Cache-Control"] == "no-store"
    expect(owner.client.get(path + "/"), 404,
           {"code": "NOT_FOUND", "message": "route not found"})
    resp = owner.client.put(path, json={})
    expect(resp, 405, {"code": "METHOD_NOT_ALLOWED", "message": "method not allowed"})
    assert resp.headers["Allow"] == "GET, POST"
    resp = owner.client.get("/api/agent/v1/test-probe/read")
    expect(resp, 405, {"code": "METHOD_NOT_ALLOWED", "message": "method not allowed"})
    assert resp.headers["Allow"] == "POST"
    resp = owner.client.options(path)
    assert resp.status_code == 405 and resp.json()["code"] == "METHOD_NOT_ALLOWED"
    expect(owner.client.get("/v1/nothing"), 404, {"error": "not_found",
                                                  "message": "route not found"})


def test_a_new_credential_is_usable_at_once_and_a_revoked_one_refused(owner: Namespaced) -> None:
    path = credentials(owner)
    for _ in range(5):
        body = create(owner).json()
        assert probe(owner, body["token"]).status_code == 200
        assert owner.as_("user:alice").delete(f"{path}/{body['id']}").status_code == 204
        assert probe(owner, body["token"]).status_code == 401
