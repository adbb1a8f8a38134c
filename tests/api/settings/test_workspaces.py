"""GET /v1/workspaces: the caller and the workspaces where it holds a role.

The tests marked ``shared_service`` share one service, each with subjects and workspaces named
for it alone (``own``); the bootstrap administrator's list, every workspace of the service with
members, keeps a fresh one."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.api.conftest import Api, expect
from tests.api.settings.conftest import ADMIN, add_member
from tests.support.api_helpers import fresh

shared = pytest.mark.shared_service  # the test's subjects and workspaces are its own


@dataclass(frozen=True)
class Team:
    """conftest's ``team`` under names no other test uses: ``acme`` with alice (owner) and bob
    (admin); alice is also admin of ``beta``."""

    api: Api
    alice: str
    bob: str
    acme: str
    beta: str

    def as_(self, subject: str | None) -> Api:
        return self.api.as_(subject)


@pytest.fixture
def own(api: Api) -> Team:
    team = Team(api, fresh("user:alice"), fresh("user:bob"), fresh("acme"), fresh("beta"))
    add_member(api, team.alice, "owner", ws=team.acme)
    add_member(api, team.bob, "admin", caller=team.alice, ws=team.acme)
    add_member(api, team.alice, "admin", ws=team.beta)
    return team


def _subject(subject: str) -> dict[str, str]:
    kind, _, name = subject.partition(":")
    return {"kind": kind, "name": name}


@shared
def test_the_callers_workspaces_with_roles_sorted(own: Team) -> None:
    zeta, first = fresh("Zeta".lower()), fresh("a-first")
    add_member(own.api, own.alice, "viewer", ws=zeta)
    add_member(own.api, own.alice, "member", ws=first)
    resp = own.as_(own.alice).get("/v1/workspaces")
    assert resp.status_code == 200
    assert resp.json() == {"subject": _subject(own.alice), "items": [
        {"namespace": first, "role": "member"}, {"namespace": own.acme, "role": "owner"},
        {"namespace": own.beta, "role": "admin"}, {"namespace": zeta, "role": "viewer"}]}
    assert own.as_(own.bob).get("/v1/workspaces").json()["items"] == [
        {"namespace": own.acme, "role": "admin"}]


@shared
def test_changes_are_read_back_at_once(own: Team) -> None:
    alice, bob = own.as_(own.alice), own.as_(own.bob)
    assert alice.put(f"/v1/namespaces/{own.acme}/members", {
        "subject": _subject(own.bob), "role": "viewer"}).status_code == 200
    assert bob.get("/v1/workspaces").json()["items"] == [
        {"namespace": own.acme, "role": "viewer"}]
    assert alice.delete(f"/v1/namespaces/{own.acme}/members/{own.bob}").status_code == 204
    assert bob.get("/v1/workspaces").json()["items"] == []


def test_the_bootstrap_administrator_sees_every_workspace_with_members(team: Api) -> None:
    resp = team.as_(ADMIN).get("/v1/workspaces")
    assert resp.json() == {"subject": {"kind": "service", "name": "context-service-admin"},
                           "items": [{"namespace": "acme", "role": "owner"},
                                     {"namespace": "beta", "role": "owner"}]}


@shared  # no test of the module gives either caller a role
def test_strangers_and_anonymous_callers_have_none(own: Team) -> None:
    assert own.as_("agent:stranger").get("/v1/workspaces").json() == {
        "subject": {"kind": "agent", "name": "stranger"}, "items": []}
    assert own.as_(None).get("/v1/workspaces").json() == {
        "subject": {"kind": "user", "name": "anonymous"}, "items": []}
    expect(own.as_("alice").get("/v1/workspaces"), 400, {
        "error": "invalid_request",
        "message": "X-Context-Subject must be kind:name with kind user, agent, workload or "
                   "service"})


@shared
def test_documented_in_the_openapi_document(api: Api) -> None:
    op = api.get("/schema/openapi.json").json()["paths"]["/v1/workspaces"]["get"]
    assert [p["name"] for p in op["parameters"]] == ["X-Context-Subject"]
    assert op["responses"]["default"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
    paths = api.get("/schema/openapi.json").json()["paths"]
    assert not [p for p in paths if p.startswith("/settings")]
