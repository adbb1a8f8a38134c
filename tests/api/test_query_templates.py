"""Administration of query templates (spec 11.1, 11.2): routes, validation in order, the
database check, versions and retirement, and context sets naming templates (6.3)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent.templates_namespaced import registered, templates
from tests.api.agent.templates_support import template_body
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import seed_workspace, sets

# one service for the module: every test's templates live in a workspace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
SQL = "SELECT record_id FROM passages WHERE collection_id = :c"
PARAMS = [{"name": "c", "type": "text", "required": True}]


@pytest.fixture
def ws(api: Api) -> Namespaced:
    """A workspace of the test's own, one member per role."""
    own = namespaced(api, "acme")
    seed_workspace(own)
    return own


def register(api: Namespaced, template_id: str, sql: str,
             parameters: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    return api.as_("user:alice").post(templates(api), template_body(template_id, sql, parameters,
                                                                    **extra))


def bad(resp: Any, message: str) -> None:
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"error": "invalid_request", "message": message}


def test_register_list_read_replace_retire(ws: Namespaced) -> None:
    created = registered(ws, "by-collection", SQL, PARAMS)
    assert list(created) == ["id", "description", "sql", "parameters", "maxRows", "timeoutMs",
                             "status", "version", "createdAt", "updatedAt"]
    assert (created["maxRows"], created["timeoutMs"], created["status"],
            created["version"]) == (100, 5000, "active", 1)
    assert created["parameters"] == [{"name": "c", "type": "text", "required": True}]
    alice = ws.as_("user:alice")
    assert alice.get(f"{templates(ws)}/by-collection").json() == created
    assert [t["id"] for t in alice.get(templates(ws)).json()["items"]] == ["by-collection"]
    same = alice.put(f"{templates(ws)}/by-collection", template_body("by-collection", SQL, PARAMS))
    assert same.status_code == 200 and same.json()["version"] == 1
    changed = alice.put(f"{templates(ws)}/by-collection",
                        template_body("by-collection", SQL, PARAMS, maxRows=5))
    assert changed.json()["version"] == 2 and changed.json()["maxRows"] == 5
    bad(alice.put(f"{templates(ws)}/by-collection", template_body("other", SQL, PARAMS)),
        "query template id must match the path")
    assert alice.delete(f"{templates(ws)}/by-collection").status_code == 204
    assert alice.delete(f"{templates(ws)}/by-collection").status_code == 204
    assert alice.get(f"{templates(ws)}/by-collection").json()["status"] == "retired"
    resp = alice.put(f"{templates(ws)}/by-collection", template_body("by-collection", SQL, PARAMS))
    assert resp.status_code == 409 and resp.json()["message"] == \
        "query template conflict: query template is retired"
    resp = register(ws, "by-collection", SQL, PARAMS)
    assert resp.status_code == 409 and resp.json() == {
        "error": "already_exists", "message": "query template already exists"}
    assert alice.get(f"{templates(ws)}/nope").status_code == 404
    assert alice.delete(f"{templates(ws)}/nope").status_code == 404


def test_only_managers_see_templates(ws: Namespaced) -> None:
    registered(ws, "t", "SELECT 1 AS one")
    for subject in ("user:mia", "user:vic", "user:stranger"):
        resp = ws.as_(subject).get(templates(ws))
        assert resp.status_code == 404 and resp.json()["message"] == "workspace not found"


@pytest.mark.parametrize(("body", "message"), [
    ({"id": "Bad_Id"}, "query template id must be a lowercase Kubernetes name"),
    ({"description": " "}, "query template description must be 1 to 1000 characters"),
    ({"description": "x" * 1001}, "query template description must be 1 to 1000 characters"),
    ({"sql": ""}, "query template sql must be 1 to 20000 characters"),
    ({"sql": "SELECT 1" + " " * 20000}, "query template sql must be 1 to 20000 characters"),
    ({"parameters": [{"name": "a", "type": "text"}] * 2},
     "query template parameter names must be distinct and match ^[a-z_][a-z0-9_]{0,62}$"
     " (at most 20)"),
    ({"parameters": [{"name": f"p{i}", "type": "text"} for i in range(21)]},
     "query template parameter names must be distinct and match ^[a-z_][a-z0-9_]{0,62}$"
     " (at most 20)"),
    ({"parameters": [{"name": "p", "type": "json"}]},
     'query template parameter "p" has an unsupported type'),
    ({"parameters": [{"name": "p", "type": "text", "required": True, "default": "x"}]},
     'query template parameter "p" cannot be required and have a default'),
    ({"parameters": [{"name": "p", "type": "date", "default": "2024-02-30"}]},
     'query template parameter "p" has a default that does not match its type'),
    ({"maxRows": 0}, "maxRows must be between 1 and 1000"),
    ({"maxRows": 1001}, "maxRows must be between 1 and 1000"),
    ({"timeoutMs": 99}, "timeoutMs must be between 100 and 10000"),
    ({"timeoutMs": 10001}, "timeoutMs must be between 100 and 10000"),
    ({"sql": "SELECT :p FROM nowhere", "parameters": [{"name": "p", "type": "text"}]},
     'invalid query template: relation "nowhere" does not exist'),
    ({"sql": "SELECT no_such_column FROM passages"},
     'invalid query template: column "no_such_column" does not exist'),
    ({"sql": "SELECT FROM WHERE"}, 'invalid query template: syntax error at or near "WHERE"'),
])
def test_validation_in_order(ws: Namespaced, body: dict[str, Any], message: str) -> None:
    payload = {**template_body("t", "SELECT 1 AS one"), **body}
    bad(ws.as_("user:alice").post(templates(ws), payload), message)


def test_limits_at_their_edges_are_accepted(ws: Namespaced) -> None:
    registered(ws, "edges", "SELECT 1 AS one", maxRows=1000, timeoutMs=10000,
               description="x" * 1000)
    registered(ws, "low", "SELECT 1 AS one", maxRows=1, timeoutMs=100)


def test_context_sets_name_active_templates_only(ws: Namespaced) -> None:
    registered(ws, "t", "SELECT 1 AS one")
    alice = ws.as_("user:alice")
    body = {"id": "s", "name": "S", "collections": [], "queryTemplates": ["t"]}
    assert alice.post(sets(ws), body).status_code == 201
    bad(alice.post(sets(ws), {**body, "id": "s2", "queryTemplates": ["missing"]}),
        'invalid context set: query template "missing" not found')
    assert alice.delete(f"{templates(ws)}/t").status_code == 204
    bad(alice.post(sets(ws), {**body, "id": "s3"}),
        'invalid context set: query template "t" not found')
    assert alice.get(f"{sets(ws)}/s").json()["queryTemplates"] == ["t"]  # keeps the id
