"""``context-sets/get`` lists the set's active query templates (agent-context-api.md §9.1):
in the set's order, without their SQL, a retired one left out, the key omitted when none is."""

from __future__ import annotations

import pytest

from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.agent.templates_support import TEMPLATES, approve, registered
from tests.api.conftest import Api
from tests.api.sets_support import seed_workspace, token

pytestmark = pytest.mark.postgres
GET = "/api/agent/v1/context-sets/get"
SQL = "SELECT collection_id, title FROM passages WHERE ordinal < :below ORDER BY 1"


def _view(api: Api, bearer: str, body: dict[str, str]) -> dict[str, object]:
    resp = api.as_(None).post(GET, body, headers={"Authorization": f"Bearer {bearer}"})
    assert resp.status_code == 200, resp.text
    found: dict[str, object] = resp.json()
    return found


def test_get_lists_the_active_templates_without_sql(api: Api) -> None:
    seed_workspace(api)
    registered(api, "by-ordinal", SQL,
               [{"name": "below", "type": "integer", "required": False, "default": 3}],
               maxRows=20, timeoutMs=900)
    registered(api, "titles", "SELECT title FROM passages ORDER BY 1")
    registered(api, "gone", "SELECT 1 AS one")
    approve(api, ["titles", "gone", "by-ordinal"])
    assert api.as_("user:alice").delete(f"{TEMPLATES}/gone").status_code == 204
    unbound = token(api)
    view = _view(api, unbound, {"contextSetId": "finance"})
    assert list(view)[-1] == "queryTemplates"
    assert view["queryTemplates"] == [
        {"id": "titles", "description": "template titles", "parameters": [],
         "maxRows": 100, "timeoutMs": 5000},
        {"id": "by-ordinal", "description": "template by-ordinal",
         "parameters": [{"name": "below", "type": "integer", "required": False, "default": 3}],
         "maxRows": 20, "timeoutMs": 900}]
    assert "sql" not in str(view) and "SELECT" not in str(view)
    # a bound credential reads the same view of its own set
    assert _view(api, token(api, context_set_id="finance"), {}) == view
    # a set whose templates are all retired omits the key
    for template_id in ("titles", "by-ordinal"):
        assert api.as_("user:alice").delete(f"{TEMPLATES}/{template_id}").status_code == 204
    assert "queryTemplates" not in _view(api, unbound, {"contextSetId": "finance"})
