"""The authorization matrix, generated from the route table: every route that names a context,
asked by a subject without the permission it needs, by a subject with no grant at all and by one
holding every permission on the same name in another namespace, answers 404 like an absent
context, writes nothing, and lets no body, header or list show the hidden context's name, its
grants or its records. Routes added later are covered by the same rules; the permission a route
needs is the document's ``x-permission``. Every documented route belongs to a family of
``authorization_routes`` (workspace routes: test_authorization_workspaces.py); a route of none
fails."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.events import Subject
from context_service.http.mcp.endpoint import McpEndpoint
from tests.api.authorization_routes import family, leaked, routes_of
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import credentials, seed_workspace, token
from tests.support.api_helpers import fresh

# one service for the module: each test hides its context in namespaces of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
HIDDEN = "hidden-ledger"
SNAPSHOT = "hidden-snap"
GRANTEE = "grantee-watermark"
RECORD_TEXT = "watermark-record-text"
REVISION = "5eed" * 16
OWNER = Subject("user", "owner")
PERMISSIONS = ("read", "write", "attach", "derive", "administer")
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
SECRETS = (HIDDEN, GRANTEE, RECORD_TEXT, REVISION, SNAPSHOT)


def lacking(permission: str) -> tuple[str, ...]:
    """Every permission but one, as a valid grant (write, attach, derive need read)."""
    if permission == "read":
        return ("administer",)
    return tuple(p for p in PERMISSIONS if p != permission)


def bodies() -> dict[str, Any]:
    """A valid body per operation, so authorization (not validation) decides."""
    return {
        "publish_revision": {"id": "ab" * 32, "createdAt": "2026-01-01T00:00:00Z",
                             "operation": "sync"},
        "publish_query_index": {"revision": REVISION, "records": []},
        "set_grant": {"subject": {"kind": "agent", "name": "intruder"},
                      "permissions": ["read"]},
        "revoke_grant": {"kind": "agent", "name": GRANTEE},
        "attach_consumer": {"kind": "agent", "name": "probe", "accessMode": "readOnly"},
        "detach_consumer": {"kind": "agent", "name": "probe"},
        "create_snapshot": {"name": "another-snap"},
        "create_clone": {"name": "stolen-copy", "snapshot": SNAPSHOT},
        "restore": {"snapshot": SNAPSHOT},
        "set_retention": {"keepLast": 1},
        "query": {"contexts": [HIDDEN], "query": "watermark"},
    }


@dataclass
class Hidden:
    """The module's client, and the namespaces of one test: ``ns`` hides the context, ``other``
    holds the neighbour's context of the same name."""

    client: TestClient[Any]
    ns: str
    other: str

    def concrete(self, path: str) -> str:
        return path.format(namespace=self.ns, name=HIDDEN, snapshot=SNAPSHOT)


def hide_a_context(container: bootstrap.Container, ns: str, other: str) -> None:
    """A context with grants, a revision, query records and a snapshot, in ``ns``; and a context
    of the same name in ``other`` on which the 'neighbour' holds everything."""
    app = container.contexts
    app.execute(ns, HIDDEN, c.CreateContext(
        actor=OWNER, name=HIDDEN, namespace=ns, type="memory", backend="pvc", size="1Gi",
        access_mode="ReadWriteOnce"))
    app.execute(ns, HIDDEN, c.GrantAccess(actor=OWNER, subject=Subject("agent", GRANTEE),
                                          permissions=("read",)))
    for permission in PERMISSIONS:
        app.execute(ns, HIDDEN, c.GrantAccess(
            actor=OWNER, subject=Subject("agent", f"lacks-{permission}"),
            permissions=lacking(permission)))
    app.execute(ns, HIDDEN, c.PublishRevision(
        actor=OWNER, id=REVISION, created_at=datetime(2026, 1, 1, tzinfo=UTC),
        operation="sync", producer="", parameters={}, sources=(), files=1, bytes=1))
    record = QueryRecord(id="r1", context=HIDDEN, type="memory", revision=REVISION,
                         text=RECORD_TEXT, source=SourceRef("", "", ""))
    app.execute(ns, HIDDEN, c.PublishQueryIndex(actor=OWNER, revision=REVISION,
                                                records=(record,)))
    app.execute(ns, HIDDEN, c.RecordSnapshot(actor=OWNER, name=SNAPSHOT, storage_class="fast",
                                              snapshot_class="csi"))
    neighbour = Subject("user", "neighbour")
    app.execute(other, HIDDEN, c.CreateContext(
        actor=neighbour, name=HIDDEN, namespace=other, type="memory", backend="pvc",
        size="1Gi", access_mode="ReadWriteOnce"))
    head = container.store.head()
    for runner in container.runners.values():  # running: wait for them to apply it all
        assert runner.wait_for(head, timeout=30)


def context_routes(client: TestClient[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) of every documented operation under a context path."""
    return routes_of(client.get("/schema/openapi.json").json(), "context")


def assert_no_leak(response: Any) -> None:
    shown = leaked(response, SECRETS)
    assert shown == [], (response.request.method, response.request.url, shown, response.text)


@pytest.fixture
def hidden(api: Api, container: bootstrap.Container) -> Hidden:
    found = Hidden(api.client, fresh("vault"), fresh("elsewhere"))
    hide_a_context(container, found.ns, found.other)
    return found


def test_the_matrix_knows_every_route(api: Api) -> None:
    """A route registered in no family (a new prefix) fails here until the matrix covers it."""
    doc = api.client.get("/schema/openapi.json").json()
    unknown = sorted(path for path in doc["paths"] if family(path) is None)
    assert unknown == [], "add each to authorization_routes.FAMILIES with its rules"


def test_the_matrix_covers_every_context_route(api: Api) -> None:
    routes = context_routes(api.client)
    assert len(routes) >= 21
    documented = {op["operationId"]: op.get("x-permission") for _, _, op in routes}
    assert documented["get_context"] == "read" and documented["create_clone"] == "derive"


@pytest.mark.parametrize("who", ["stranger", "neighbour", *(f"lacks-{p}" for p in PERMISSIONS)])
def test_a_subject_without_the_permission_sees_nothing(
        hidden: Hidden, container: bootstrap.Container, who: str) -> None:
    subject = f"agent:{who}" if who.startswith("lacks-") else f"user:{who}"
    head = container.store.head()
    checked = 0
    for method, path, op in context_routes(hidden.client):
        needed = op.get("x-permission")
        if who.startswith("lacks-") and needed != who.removeprefix("lacks-"):
            continue  # this subject holds what the route needs
        body = bodies().get(op["operationId"])
        for query in ("", "?asOfPosition=1") if "point" in _params(op) else ("",):
            response = hidden.client.request(method, hidden.concrete(path) + query, json=body,
                                      headers={"X-Context-Subject": subject})
            assert response.status_code == 404, (who, method, path, response.text)
            assert response.json() == NOT_FOUND
            assert_no_leak(response)
            checked += 1
    assert checked > 0
    assert container.store.head() == head, "an unauthorized request wrote to the log"


@pytest.mark.parametrize("who", ["user:stranger", "user:neighbour"])
def test_lists_and_queries_leave_the_hidden_context_out(hidden: Hidden, who: str) -> None:
    headers = {"X-Context-Subject": who}
    for path in (f"/v1/namespaces/{hidden.ns}/contexts",
                 f"/v1/namespaces/{hidden.ns}/contexts?asOfPosition=1000000"):
        listed = hidden.client.get(path, headers=headers)
        assert (listed.status_code, listed.json()) == (200, {"items": []})
    searched = hidden.client.post(f"/v1/namespaces/{hidden.ns}/query",
                                  json={"query": "watermark"}, headers=headers)
    assert (searched.status_code, searched.json()) == (200, {"items": []})
    for response in (listed, searched):
        assert_no_leak(response)


@pytest.mark.parametrize("who", ["user:stranger", "user:neighbour", "agent:lacks-read"])
def test_a_query_naming_the_hidden_context_is_not_found(hidden: Hidden, who: str) -> None:
    named = hidden.client.post(f"/v1/namespaces/{hidden.ns}/query", json=bodies()["query"],
                               headers={"X-Context-Subject": who})
    assert (named.status_code, named.json()) == (404, NOT_FOUND)
    assert_no_leak(named)


def test_the_owner_sees_what_the_others_do_not(hidden: Hidden) -> None:
    """The matrix is not vacuous: the same requests by the owner find the context."""
    headers = {"X-Context-Subject": "user:owner"}
    assert hidden.client.get(hidden.concrete("/v1/namespaces/{namespace}/contexts/{name}"),
                             headers=headers).status_code == 200
    grants = hidden.client.get(
        hidden.concrete("/v1/namespaces/{namespace}/contexts/{name}/grants"), headers=headers)
    assert GRANTEE in grants.text
    found = hidden.client.post(f"/v1/namespaces/{hidden.ns}/query", json=bodies()["query"],
                               headers=headers)
    assert RECORD_TEXT in found.text


def _params(op: dict[str, Any]) -> set[str]:
    return {p["name"] for p in op.get("parameters", ())}


# --- the MCP endpoint: every agent-credential failure as the agent API answers it ------------

AGENT_LIST = "/api/agent/v1/context-sets/list"
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}
MCP_CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "list_context_sets", "arguments": {}}}
METADATA = '/.well-known/oauth-protected-resource/mcp"'
# refused at /mcp itself (the pipeline's admission), or by the route each tool call runs
ADMISSION = {"none": "UNAUTHORIZED", "malformed": "UNAUTHORIZED", "unknown": "UNAUTHORIZED",
             "revoked": "UNAUTHORIZED", "expired": "EXPIRED_CREDENTIAL",
             "browser": "AGENT_BROWSER_REQUEST_REFUSED"}
PER_CALL = {"scope": "FORBIDDEN", "authority": "AGENT_CREDENTIAL_AUTHORITY_LOST"}


def test_the_matrix_knows_the_mcp_endpoint() -> None:
    paths = [path for route in McpEndpoint().routes for path in route.paths]
    assert paths and all(family(path) is not None for path in paths), paths


def _failing_credential(api: Namespaced, case: str) -> dict[str, str]:
    """The headers of a request failing as ``case`` (``api``'s workspace seeded)."""
    if case == "none":
        return {}
    if case == "malformed":
        return {"Authorization": "Basic abc"}
    if case == "unknown":
        return {"Authorization": "Bearer bdk_0123456789abcdef_" + "A" * 43}
    if case == "scope":
        return {"Authorization": f"Bearer {token(api, ('queries:run',))}"}
    if case == "authority":
        members = f"/v1/namespaces/{api.ns}/members"
        assert api.as_("user:alice").put(members, {"subject": {"kind": "user", "name": "ann"},
                                                   "role": "admin"}).status_code == 200
        held = token(api, creator="user:ann")
        assert api.as_("user:alice").delete(f"{members}/user:ann").status_code == 204
        return {"Authorization": f"Bearer {held}"}
    held = token(api)
    if case == "revoked":
        assert api.as_("user:alice").delete(
            f"{credentials(api)}/{held.split('_')[1]}").status_code == 204
    if case == "browser":
        return {"Authorization": f"Bearer {held}", "Origin": "https://evil.example"}
    return {"Authorization": f"Bearer {held}"}


@pytest.mark.parametrize("case", [*ADMISSION, *PER_CALL])
def test_mcp_refuses_each_credential_failure_as_the_agent_api(
        api: Api, container: bootstrap.Container, case: str) -> None:
    own = namespaced(api, "acme")  # a workspace of the test's own
    seed_workspace(own)
    headers = _failing_credential(own, case)
    agent = api.client.app.state.services.agent
    real = agent.clock
    if case == "expired":
        agent.clock = lambda: real() + timedelta(days=31)
    head = container.store.head()
    try:
        over_http = api.as_(None).post(AGENT_LIST, {}, headers=headers)
        over_mcp = api.as_(None).post("/mcp", MCP_CALL, headers={**MCP_HEADERS, **headers})
    finally:
        agent.clock = real
    assert over_http.json()["code"] == {**ADMISSION, **PER_CALL}[case], over_http.text
    if case in ADMISSION:
        assert (over_mcp.status_code, over_mcp.json()) == (over_http.status_code,
                                                           over_http.json())
        assert over_mcp.headers["Cache-Control"] == "no-store"
        challenge = over_mcp.headers.get("WWW-Authenticate", "")
        challenged = challenge.startswith('Bearer resource_metadata="') and METADATA in challenge
        assert challenged is (over_http.status_code == 401), challenge
    else:  # admitted: the tool call is refused by its route, as a tool error
        assert over_mcp.status_code == 200, over_mcp.text
        result = over_mcp.json()["result"]
        assert result["isError"] is True and result["structuredContent"] == over_http.json()
    assert container.store.head() == head, "a refused request wrote to the log"
