"""GET /v1/workspaces: the caller and the workspaces where it holds a role."""

from __future__ import annotations

from tests.api.conftest import Api, expect
from tests.api.settings.conftest import ADMIN, add_member


def test_the_callers_workspaces_with_roles_sorted(team: Api) -> None:
    add_member(team, "user:alice", "viewer", ws="Zeta".lower())
    add_member(team, "user:alice", "member", ws="a-first")
    resp = team.as_("user:alice").get("/v1/workspaces")
    assert resp.status_code == 200
    assert resp.json() == {"subject": {"kind": "user", "name": "alice"}, "items": [
        {"namespace": "a-first", "role": "member"}, {"namespace": "acme", "role": "owner"},
        {"namespace": "beta", "role": "admin"}, {"namespace": "zeta", "role": "viewer"}]}
    assert team.as_("user:bob").get("/v1/workspaces").json()["items"] == [
        {"namespace": "acme", "role": "admin"}]


def test_changes_are_read_back_at_once(team: Api) -> None:
    alice, bob = team.as_("user:alice"), team.as_("user:bob")
    assert alice.put("/v1/namespaces/acme/members", {
        "subject": {"kind": "user", "name": "bob"}, "role": "viewer"}).status_code == 200
    assert bob.get("/v1/workspaces").json()["items"] == [{"namespace": "acme", "role": "viewer"}]
    assert alice.delete("/v1/namespaces/acme/members/user:bob").status_code == 204
    assert bob.get("/v1/workspaces").json()["items"] == []


def test_the_bootstrap_administrator_sees_every_workspace_with_members(team: Api) -> None:
    resp = team.as_(ADMIN).get("/v1/workspaces")
    assert resp.json() == {"subject": {"kind": "service", "name": "context-service-admin"},
                           "items": [{"namespace": "acme", "role": "owner"},
                                     {"namespace": "beta", "role": "owner"}]}


def test_strangers_and_anonymous_callers_have_none(team: Api) -> None:
    assert team.as_("agent:stranger").get("/v1/workspaces").json() == {
        "subject": {"kind": "agent", "name": "stranger"}, "items": []}
    assert team.as_(None).get("/v1/workspaces").json() == {
        "subject": {"kind": "user", "name": "anonymous"}, "items": []}
    expect(team.as_("alice").get("/v1/workspaces"), 400, {
        "error": "invalid_request",
        "message": "X-Context-Subject must be kind:name with kind user, agent, workload or "
                   "service"})


def test_documented_in_the_openapi_document(api: Api) -> None:
    op = api.get("/schema/openapi.json").json()["paths"]["/v1/workspaces"]["get"]
    assert [p["name"] for p in op["parameters"]] == ["X-Context-Subject"]
    assert op["responses"]["default"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
    paths = api.get("/schema/openapi.json").json()["paths"]
    assert not [p for p in paths if p.startswith("/settings")]
