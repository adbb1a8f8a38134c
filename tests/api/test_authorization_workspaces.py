"""The authorization matrix of the workspace routes, generated from the route table: every
``/v1`` workspace route (members, context sets, query templates) asked by a non-member, by the
owner of another namespace and by a member whose role lacks the route's permission (the
document's ``x-permission``) answers ``404 workspace not found``; the ``/api/w/{wsId}`` routes
answer 404 to non-members and 403 to members lacking the permission (agent-context-api.md
3.2, 4.2). Nothing is written, and no body or header shows the hidden workspace's members, sets
or credentials; ids of that workspace are not found in another, and another workspace's agent
credential sees none of its sets."""

from __future__ import annotations

import re
from typing import Any

import pytest

from context_service import bootstrap
from context_service.domain.workspace.roles import role_permits
from tests.api.authorization_routes import leaked, routes_of
from tests.api.conftest import Api
from tests.support.api_helpers import fresh

# one service for the module: each test hides a workspace of its own from a neighbour of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
NEIGHBOUR = "user:neighbour"  # a parameter: the test's own neighbour (``Hidden.neighbour``)
ADMIN = "service:context-service-admin"
OWNER = "owner-watermark"
SET_ID, SET_NAME = "curated-watermark", "set-name-watermark"
TERM, DEFINITION, ANSWER = "term-watermark", "definition-watermark", "answer-watermark"
CREDENTIAL = "credential-name-watermark"
# the members whose role may lack a route's permission
ROLE_SUBJECTS = {"admin": "user:as-admin", "member": "user:as-member", "viewer": "user:as-viewer"}
WORKSPACE_NOT_FOUND = {"error": "not_found", "message": "workspace not found"}
API_WORKSPACE_NOT_FOUND = {"code": "NOT_FOUND", "message": "workspace not found"}
BODIES: dict[str, Any] = {
    "set_member": {"subject": {"kind": "user", "name": "intruder"}, "role": "owner"},
    "create_context_set": {"id": "intruding", "name": "intruding", "collections": []},
    "replace_context_set": {"name": "replaced", "collections": []},
    "create_credential": {"name": "intruding", "scopes": ["context:read"], "expiresInDays": 1},
    "register_query_template": {"id": "intruding", "description": "intruding",
                                "sql": "select 1"},
    "replace_query_template": {"description": "replaced", "sql": "select 1"},
}
# agent bodies valid but for the set they name
AGENT_BODIES: dict[str, Any] = {"agent_lookup": {"term": TERM},
                                "agent_match": {"question": "who holds the watermark"},
                                "agent_context_pack": {"task": "who holds the watermark"},
                                "agent_context_pack_stream": {"task": "who holds the watermark"},
                                "agent_run_query_template": {"templateId": "who"}}


class Hidden:
    """The hidden workspace ``ns`` and its credential id (random); the neighbour, owner of the
    workspace ``other``, and its agent token."""

    def __init__(self, ns: str, credential_id: str, other: str, neighbour: str,
                 neighbour_token: str) -> None:
        self.ns = ns
        self.credential_id = credential_id
        self.other = other
        self.neighbour = neighbour
        self.neighbour_token = neighbour_token

    def caller(self, who: str) -> str:
        """``who`` of a parameter, the neighbour standing for the test's own."""
        return self.neighbour if who == NEIGHBOUR else who

    @property
    def secrets(self) -> tuple[str, ...]:
        return (OWNER, SET_ID, SET_NAME, TERM, DEFINITION, ANSWER, CREDENTIAL,
                self.credential_id)


def _ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if response.content else None


def member(api: Api, caller: str, namespace: str, subject: str, role: str) -> None:
    kind, _, name = subject.partition(":")
    _ok(api.as_(caller).put(f"/v1/namespaces/{namespace}/members",
                            {"subject": {"kind": kind, "name": name}, "role": role}))


@pytest.fixture
def hidden(api: Api) -> Hidden:
    """A ``vault``: an owner, a member of every other role, a context set and a credential; an
    ``elsewhere``: the neighbour's own workspace with a set and a credential."""
    ns, other, neighbour = fresh("vault"), fresh("elsewhere"), f"user:{fresh('neighbour')}"
    owner = f"user:{OWNER}"
    member(api, ADMIN, ns, owner, "owner")
    for role, subject in ROLE_SUBJECTS.items():
        member(api, owner, ns, subject, role)
    _ok(api.as_(owner).post(f"/v1/namespaces/{ns}/context-sets", {
        "id": SET_ID, "name": SET_NAME, "collections": ["hidden-ledger"],
        "definitions": [{"term": TERM, "definition": DEFINITION}],
        "verifiedAnswers": [{"id": "who", "question": "who holds the watermark",
                             "answer": ANSWER}]}), 201)
    created = _ok(api.as_(owner).post(f"/api/w/{ns}/agent-credentials", {
        "name": CREDENTIAL, "scopes": ["context:read"], "expiresInDays": 30}), 201)
    member(api, ADMIN, other, neighbour, "owner")
    _ok(api.as_(neighbour).post(f"/v1/namespaces/{other}/context-sets", {
        "id": "neighbour-set", "name": "neighbour", "collections": ["notes"]}), 201)
    token = _ok(api.as_(neighbour).post(f"/api/w/{other}/agent-credentials", {
        "name": "neighbour", "scopes": ["context:read", "queries:run"], "expiresInDays": 30}),
        201)["token"]
    return Hidden(ns, created["id"], other, neighbour, token)


def workspace_routes(api: Api) -> list[tuple[str, str, dict[str, Any]]]:
    document = api.get("/schema/openapi.json").json()
    return routes_of(document, "workspace") + routes_of(document, "workspace-api")


def concrete(path: str, hidden: Hidden, namespace: str | None = None) -> str:
    """The path naming the hidden workspace's resources (a member, a set, a credential), in
    ``namespace`` (the hidden one unless named)."""
    namespace = namespace or hidden.ns
    ids = {"credentials": hidden.credential_id}
    kind = next((k for k in ids if k in path), None)
    return (path.replace("{namespace}", namespace).replace("{wsId}", namespace)
            .replace("{member}", f"user:{OWNER}")
            .replace("{id}", ids[kind] if kind else SET_ID))


def expected(path: str, who: str, permission: str) -> tuple[int, dict[str, str]]:
    if not path.startswith("/api/"):
        return 404, WORKSPACE_NOT_FOUND
    if who in ROLE_SUBJECTS.values():
        return 403, {"code": "FORBIDDEN", "message": f'permission "{permission}" is required'}
    return 404, API_WORKSPACE_NOT_FOUND


def test_every_workspace_route_states_its_permission(api: Api) -> None:
    routes = workspace_routes(api)
    assert len(routes) >= 12
    undocumented = [op["operationId"] for _, _, op in routes if ":" not in op.get(
        "x-permission", "")]
    assert undocumented == [], 'state the workspace permission (the route\'s opt["permission"])'


@pytest.mark.parametrize("who", ["user:stranger", NEIGHBOUR, *ROLE_SUBJECTS.values()])
def test_a_caller_without_the_permission_is_not_told_anything(
        api: Api, container: bootstrap.Container, hidden: Hidden, who: str) -> None:
    role = next((r for r, s in ROLE_SUBJECTS.items() if s == who), None)
    head = container.store.head()
    checked = 0
    for method, path, op in workspace_routes(api):
        permission = op["x-permission"]
        if role is not None and role_permits(role, permission):
            continue  # this member holds what the route needs
        response = api.as_(hidden.caller(who)).request(method, concrete(path, hidden),
                                        BODIES.get(op["operationId"]))
        status, body = expected(path, who, permission)
        assert (response.status_code, response.json()) == (status, body), (who, method, path)
        assert leaked(response, hidden.secrets) == [], (who, method, path)
        checked += 1
    assert checked > 0 or role == "admin"
    assert container.store.head() == head, "an unauthorized request wrote to the log"


def test_ids_of_the_hidden_workspace_are_not_found_in_another(
        api: Api, container: bootstrap.Container, hidden: Hidden) -> None:
    """The neighbour manages its own workspace; the hidden workspace's member, set and
    credential named there are absent."""
    head = container.store.head()
    checked = 0
    for method, path, op in workspace_routes(api):
        if not set(re.findall(r"\{(\w+)\}", path)) - {"namespace", "wsId"}:
            continue
        response = api.as_(hidden.neighbour).request(
            method, concrete(path, hidden, hidden.other), BODIES.get(op["operationId"]))
        assert response.status_code == 404, (method, path, response.text)
        assert next(iter(response.json().values())).lower() == "not_found"
        assert response.json()["message"].endswith("not found"), response.text
        assert leaked(response, hidden.secrets) == [], (method, path)
        checked += 1
    assert checked >= 4
    assert container.store.head() == head


def test_another_workspaces_credential_sees_none_of_its_sets(api: Api, hidden: Hidden) -> None:
    """Every agent route, with the neighbour's credential, naming the hidden set and naming
    none: the set is not found and nothing of it shows (lists and matches leave it out)."""
    document = api.get("/schema/openapi.json").json()
    routes = routes_of(document, "agent")
    assert len(routes) >= 4
    headers = {"Authorization": f"Bearer {hidden.neighbour_token}"}
    for method, path, op in routes:
        body = dict(AGENT_BODIES.get(op["operationId"], {}))
        for named in (True, False):
            sent = {**body, "contextSetId": SET_ID} if named else body
            response = api.request(method, re.sub(r"\{\w+\}", SET_ID, path), sent,
                                   headers=headers)
            assert response.status_code < 500, (path, response.text)
            assert leaked(response, hidden.secrets) == [], (path, named, response.text)
            schema = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            names_a_set = "contextSetId" in str(schema)
            known = op["operationId"] in AGENT_BODIES or not body
            if named and names_a_set and (known or response.status_code != 400):
                assert (response.status_code, response.json()) == (404, {
                    "code": "NOT_FOUND", "message": "context set not found"}), path


def test_workspace_lists_leave_the_hidden_workspace_out(api: Api, hidden: Hidden) -> None:
    stranger = _ok(api.as_("user:stranger").get("/v1/workspaces"))
    assert stranger["items"] == []
    neighbour = api.as_(hidden.neighbour).get("/v1/workspaces")
    assert _ok(neighbour)["items"] == [{"namespace": hidden.other, "role": "owner"}]
    listed = _ok(api.as_(hidden.neighbour).get(f"/v1/namespaces/{hidden.other}/context-sets"))
    assert [s["id"] for s in listed["items"]] == ["neighbour-set"]
    credentials = api.as_(hidden.neighbour).get(f"/api/w/{hidden.other}/agent-credentials")
    assert [c["name"] for c in _ok(credentials)["items"]] == ["neighbour"]
    for response in (neighbour, credentials):
        assert leaked(response, hidden.secrets) == []


def test_the_owner_sees_what_the_others_do_not(api: Api, hidden: Hidden) -> None:
    """The matrix is not vacuous: the same routes answer the owner with the hidden data."""
    owner = api.as_(f"user:{OWNER}")
    assert "as-viewer" in owner.get(f"/v1/namespaces/{hidden.ns}/members").text
    assert DEFINITION in owner.get(f"/v1/namespaces/{hidden.ns}/context-sets/{SET_ID}").text
    shown = owner.get(f"/api/w/{hidden.ns}/agent-credentials/{hidden.credential_id}")
    assert CREDENTIAL in shown.text
    assert SET_NAME in api.as_("user:as-viewer").get(
        f"/v1/namespaces/{hidden.ns}/context-sets").text
