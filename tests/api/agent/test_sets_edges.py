"""Edges of context-set administration (agent-context-api.md §1.7, §6.2, §6.3): the work one
body can cause before it is refused, and a membership changed by another replica of the service
(for the sets and the query templates they name).

One service for the module: each test's workspace is a namespace of its own."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.access import WorkspaceApplication
from context_service.domain.events import Subject
from context_service.domain.workspace.commands import RemoveMember
from tests.api.agent.templates_namespaced import templates
from tests.api.agent.templates_support import template_body
from tests.api.conftest import Api, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import create_set, seed_workspace, sets
from tests.api.sets_support import set_body

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
TEMPLATES_RULE = {"error": "invalid_request",
                  "message": "context set queryTemplates must be distinct (at most 50)"}


@pytest.fixture
def ws(api: Api) -> Namespaced:
    """A workspace of the test's own with one member per role, as its owner ``user:alice``."""
    own = namespaced(api, "acme")
    seed_workspace(own)
    return own.as_("user:alice")


@pytest.fixture
def looked_up(ws: Namespaced, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every query-template name the set routes look up, in order."""
    found = ws.client.app.state.services.context_sets
    real = found.active_templates
    names: list[str] = []

    def counting(namespace: str, named: Iterable[str]) -> frozenset[str]:
        named = list(named)
        names.extend(named)
        return frozenset(real(namespace, named))

    monkeypatch.setattr(found, "active_templates", counting)
    return names


def test_a_body_naming_templates_past_the_limit_looks_none_up(
        ws: Namespaced, looked_up: list[str]) -> None:
    create_set(ws)
    for named in (["t"] * 20_000, [f"t{i}" for i in range(51)], ["a", "b", "a"]):
        expect(ws.post(sets(ws), set_body("other", queryTemplates=named)), 400,
               TEMPLATES_RULE)
        expect(ws.put(f"{sets(ws)}/finance", set_body(queryTemplates=named)), 400,
               TEMPLATES_RULE)
    assert looked_up == []
    # within the limit every name is looked up once, and the first unknown one is named
    expect(ws.post(sets(ws), set_body("other", queryTemplates=[f"t{i}" for i in range(50)])),
           400, {"error": "invalid_request",
                 "message": 'invalid context set: query template "t0" not found'})
    assert looked_up == [f"t{i}" for i in range(50)]
    assert ws.get(f"{sets(ws)}/finance").json()["version"] == 1


def test_a_manager_removed_elsewhere_writes_no_set_here(
        ws: Namespaced, container: bootstrap.Container) -> None:
    adam = ws.as_("user:adam")
    assert adam.post(sets(ws), set_body("mine")).status_code == 201  # seen here as an admin
    WorkspaceApplication(container.store).execute(  # a second replica over the same log
        ws.ns, RemoveMember(actor=Subject("user", "alice"), subject=Subject("user", "adam")))
    head = container.store.head()
    hidden = {"error": "not_found", "message": "workspace not found"}
    expect(adam.post(sets(ws), set_body("planted", collections=["vendor-notes"])), 404, hidden)
    expect(adam.put(f"{sets(ws)}/mine", set_body(collections=["vendor-notes"])), 404, hidden)
    expect(adam.delete(f"{sets(ws)}/mine"), 404, hidden)
    expect(adam.get(sets(ws)), 404, hidden)
    expect(adam.get(f"{sets(ws)}/mine"), 404, hidden)
    assert container.store.head() == head  # nothing was recorded
    assert ws.get(f"{sets(ws)}/mine").json()["status"] == "active"


def test_a_manager_removed_elsewhere_registers_no_template_here(
        ws: Namespaced, container: bootstrap.Container) -> None:
    """The query templates a set may name are managed on the log's membership too."""
    adam = ws.as_("user:adam")
    sql = "SELECT record_id FROM passages WHERE collection_id = :c"
    params = [{"name": "c", "type": "text", "required": True}]
    mine = adam.post(templates(ws), template_body("mine", sql, params))
    assert mine.status_code == 201, mine.text  # seen here as an admin
    WorkspaceApplication(container.store).execute(  # a second replica over the same log
        ws.ns, RemoveMember(actor=Subject("user", "alice"), subject=Subject("user", "adam")))
    head = container.store.head()
    hidden = {"error": "not_found", "message": "workspace not found"}
    expect(adam.post(templates(ws), template_body("planted", sql, params)), 404, hidden)
    expect(adam.put(f"{templates(ws)}/mine", template_body("mine", sql, params, maxRows=5)),
           404, hidden)
    expect(adam.delete(f"{templates(ws)}/mine"), 404, hidden)
    assert container.store.head() == head  # nothing was recorded
    assert ws.as_("user:alice").get(f"{templates(ws)}/mine").json()["status"] == "active"
