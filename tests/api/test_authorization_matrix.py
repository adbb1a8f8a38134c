"""The authorization matrix, generated from the route table: every route that names a context,
asked by a subject without the permission it needs, by a subject with no grant at all and by one
holding every permission on the same name in another namespace, answers 404 like an absent
context, writes nothing, and lets no body, header or list show the hidden context's name, its
grants or its records. Routes added later are covered by the same rules; the permission a route
needs is the document's ``x-permission``. Every documented route belongs to a family of
``authorization_routes`` (workspace routes: test_authorization_workspaces.py); a route of none
fails."""

from __future__ import annotations

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
from tests.api.sets_support import CREDENTIALS, MEMBERS, seed_workspace, token

pytestmark = pytest.mark.postgres
NS, OTHER = "vault", "elsewhere"
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


def hide_a_context(container: bootstrap.Container) -> None:
    """A context with grants, a revision, query records and a snapshot, in NS; and a context of
    the same name in OTHER on which the 'neighbour' holds everything."""
    app = container.contexts
    app.execute(NS, HIDDEN, c.CreateContext(
        actor=OWNER, name=HIDDEN, namespace=NS, type="memory", backend="pvc", size="1Gi",
        access_mode="ReadWriteOnce"))
    app.execute(NS, HIDDEN, c.GrantAccess(actor=OWNER, subject=Subject("agent", GRANTEE),
                                          permissions=("read",)))
    for permission in PERMISSIONS:
        app.execute(NS, HIDDEN, c.GrantAccess(
            actor=OWNER, subject=Subject("agent", f"lacks-{permission}"),
            permissions=lacking(permission)))
    app.execute(NS, HIDDEN, c.PublishRevision(
        actor=OWNER, id=REVISION, created_at=datetime(2026, 1, 1, tzinfo=UTC),
        operation="sync", producer="", parameters={}, sources=(), files=1, bytes=1))
    record = QueryRecord(id="r1", context=HIDDEN, type="memory", revision=REVISION,
                         text=RECORD_TEXT, source=SourceRef("", "", ""))
    app.execute(NS, HIDDEN, c.PublishQueryIndex(actor=OWNER, revision=REVISION,
                                                records=(record,)))
    app.execute(NS, HIDDEN, c.RecordSnapshot(actor=OWNER, name=SNAPSHOT, storage_class="fast",
                                              snapshot_class="csi"))
    neighbour = Subject("user", "neighbour")
    app.execute(OTHER, HIDDEN, c.CreateContext(
        actor=neighbour, name=HIDDEN, namespace=OTHER, type="memory", backend="pvc",
        size="1Gi", access_mode="ReadWriteOnce"))
    head = container.store.head()
    for runner in container.runners.values():  # running: wait for them to apply it all
        assert runner.wait_for(head, timeout=30)


def context_routes(client: TestClient[Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) of every documented operation under a context path."""
    return routes_of(client.get("/schema/openapi.json").json(), "context")


def concrete(path: str) -> str:
    return path.format(namespace=NS, name=HIDDEN, snapshot=SNAPSHOT)


def assert_no_leak(response: Any) -> None:
    shown = leaked(response, SECRETS)
    assert shown == [], (response.request.method, response.request.url, shown, response.text)


@pytest.fixture
def client(container: bootstrap.Container) -> Any:
    hide_a_context(container)
    with TestClient(app=bootstrap.app(container)) as found:
        yield found


def test_the_matrix_knows_every_route(client: TestClient[Any]) -> None:
    """A route registered in no family (a new prefix) fails here until the matrix covers it."""
    doc = client.get("/schema/openapi.json").json()
    unknown = sorted(path for path in doc["paths"] if family(path) is None)
    assert unknown == [], "add each to authorization_routes.FAMILIES with its rules"


def test_the_matrix_covers_every_context_route(client: TestClient[Any]) -> None:
    routes = context_routes(client)
    assert len(routes) >= 21
    documented = {op["operationId"]: op.get("x-permission") for _, _, op in routes}
    assert documented["get_context"] == "read" and documented["create_clone"] == "derive"


@pytest.mark.parametrize("who", ["stranger", "neighbour", *(f"lacks-{p}" for p in PERMISSIONS)])
def test_a_subject_without_the_permission_sees_nothing(
        client: TestClient[Any], container: bootstrap.Container, who: str) -> None:
    subject = f"agent:{who}" if who.startswith("lacks-") else f"user:{who}"
    head = container.store.head()
    checked = 0
    for method, path, op in context_routes(client):
        needed = op.get("x-permission")
        if who.startswith("lacks-") and needed != who.removeprefix("lacks-"):
            continue  # this subject holds what the route needs
        body = bodies().get(op["operationId"])
        for query in ("", "?asOfPosition=1") if "point" in _params(op) else ("",):
            response = client.request(method, concrete(path) + query, json=body,
                                      headers={"X-Context-Subject": subject})
            assert response.status_code == 404, (who, method, path, response.text)
            assert response.json() == NOT_FOUND
            assert_no_leak(response)
            checked += 1
    assert checked > 0
    assert container.store.head() == head, "an unauthorized request wrote to the log"


@pytest.mark.parametrize("who", ["user:stranger", "user:neighbour"])
def test_lists_and_queries_leave_the_hidden_context_out(client: TestClient[Any],
                                                        who: str) -> None:
    headers = {"X-Context-Subject": who}
    for path in (f"/v1/namespaces/{NS}/contexts",
                 f"/v1/namespaces/{NS}/contexts?asOfPosition=1000000"):
        listed = client.get(path, headers=headers)
        assert (listed.status_code, listed.json()) == (200, {"items": []})
    searched = client.post(f"/v1/namespaces/{NS}/query", json={"query": "watermark"},
                           headers=headers)
    assert (searched.status_code, searched.json()) == (200, {"items": []})
    for response in (listed, searched):
        assert_no_leak(response)


@pytest.mark.parametrize("who", ["user:stranger", "user:neighbour", "agent:lacks-read"])
def test_a_query_naming_the_hidden_context_is_not_found(client: TestClient[Any],
                                                        who: str) -> None:
    named = client.post(f"/v1/namespaces/{NS}/query", json=bodies()["query"],
                        headers={"X-Context-Subject": who})
    assert (named.status_code, named.json()) == (404, NOT_FOUND)
    assert_no_leak(named)


def test_the_owner_sees_what_the_others_do_not(client: TestClient[Any]) -> None:
    """The matrix is not vacuous: the same requests by the owner find the context."""
    headers = {"X-Context-Subject": "user:owner"}
    assert client.get(concrete("/v1/namespaces/{namespace}/contexts/{name}"),
                      headers=headers).status_code == 200
    grants = client.get(concrete("/v1/namespaces/{namespace}/contexts/{name}/grants"),
                        headers=headers)
    assert GRANTEE in grants.text
    found = client.post(f"/v1/namespaces/{NS}/query", json=bodies()["query"], headers=headers)
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


def _failing_credential(api: Api, case: str) -> dict[str, str]:
    """The headers of a request failing as ``case`` (the workspace ``acme`` seeded)."""
    if case == "none":
        return {}
    if case == "malformed":
        return {"Authorization": "Basic abc"}
    if case == "unknown":
        return {"Authorization": "Bearer bdk_0123456789abcdef_" + "A" * 43}
    if case == "scope":
        return {"Authorization": f"Bearer {token(api, ('queries:run',))}"}
    if case == "authority":
        assert api.as_("user:alice").put(MEMBERS, {"subject": {"kind": "user", "name": "ann"},
                                                   "role": "admin"}).status_code == 200
        held = token(api, creator="user:ann")
        assert api.as_("user:alice").delete(f"{MEMBERS}/user:ann").status_code == 204
        return {"Authorization": f"Bearer {held}"}
    held = token(api)
    if case == "revoked":
        assert api.as_("user:alice").delete(
            f"{CREDENTIALS}/{held.split('_')[1]}").status_code == 204
    if case == "browser":
        return {"Authorization": f"Bearer {held}", "Origin": "https://evil.example"}
    return {"Authorization": f"Bearer {held}"}


@pytest.mark.parametrize("case", [*ADMISSION, *PER_CALL])
def test_mcp_refuses_each_credential_failure_as_the_agent_api(
        api: Api, container: bootstrap.Container, case: str) -> None:
    seed_workspace(api)
    headers = _failing_credential(api, case)
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
