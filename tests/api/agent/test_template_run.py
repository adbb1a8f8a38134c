"""``POST /api/agent/v1/query-templates/run`` (spec 11.4): rows of the agent views confined
to the run's scope, typed parameters, value conversion, limits and the recorded run. Each test
runs in a workspace of its own on the module's one service; the NATS test is in
test_template_run_service_wide.py."""

from __future__ import annotations

from typing import Any

import pytest

from context_service import bootstrap
from tests.api.agent.packs_corpus import FACTS, NOTES
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent.templates_namespaced import approve, registered, runner, seeded
from tests.api.agent.templates_support import run
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
PASSAGES = ("SELECT collection_id, record_id, ordinal, title FROM passages"
            " WHERE collection_id = coalesce(:collection, collection_id)"
            " ORDER BY collection_id, ordinal")


@pytest.fixture
def corpus(api: Api) -> Namespaced:
    """A workspace of the test's own with the pack corpus and the template ``passages``."""
    own = seeded(namespaced(api, "acme"))
    registered(own, "passages", PASSAGES,
               [{"name": "collection", "type": "text"}])
    approve(own, ["passages"])
    return own


def test_a_run_returns_the_rows_of_the_scope_only(corpus: Namespaced) -> None:
    resp = run(runner(corpus), "passages")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert list(body) == ["columns", "rows", "rowCount", "truncated"]
    assert body["columns"] == [{"name": "collection_id", "type": "text"},
                               {"name": "record_id", "type": "text"},
                               {"name": "ordinal", "type": "integer"},
                               {"name": "title", "type": "text"}]
    assert [r[:2] for r in body["rows"]] == [
        [FACTS, "cfo-2021"], [FACTS, "cfo-2024"], [FACTS, "org-chart-finance"],
        [FACTS, "news-2024-07-b"], [FACTS, "canteen"], [NOTES, "n1"], [NOTES, "n2"]]
    assert body["rows"][0][2:] == [0, "CFO appointment 2021"]
    assert body["rows"][3][3] is None  # an empty title is NULL
    assert body["rowCount"] == 7 and body["truncated"] is False
    # adam cannot read notes: its rows are absent, exactly as if it did not exist
    adam = run(runner(corpus, "user:adam"), "passages").json()
    assert {r[0] for r in adam["rows"]} == {FACTS}


def test_parameters_are_bound_and_checked(corpus: Namespaced) -> None:
    agent = runner(corpus)
    resp = run(agent, "passages", {"collection": NOTES})
    assert resp.status_code == 200 and resp.json()["rowCount"] == 2
    resp = run(agent, "passages", {"collection": 7, "other": 1})
    assert resp.status_code == 400
    assert resp.json()["details"] == [
        {"path": "$.parameters.other", "message": "is not a parameter of this template"},
        {"path": "$.parameters.collection", "message": "must be a string"}]


def test_value_conversion_and_truncation(corpus: Namespaced) -> None:
    registered(corpus, "values",
               "SELECT 1::bigint AS i, 2.50::numeric AS n, 'NaN'::float8 AS f,"
               " true AS b, DATE '2024-07-01' AS d,"
               " TIMESTAMPTZ '2024-07-01 12:00:00.5+02' AS tz,"
               " TIMESTAMP '2024-07-01 12:00:00' AS ts, '{\"a\": [1]}'::jsonb AS j,"
               " ARRAY['x', NULL] AS a, NULL::text AS z, '1 day'::interval AS iv,"
               " g FROM generate_series(1, 5) AS g WHERE g <= :n",
               [{"name": "n", "type": "integer", "default": 5}], maxRows=3)
    approve(corpus, ["passages", "values"])
    body = run(runner(corpus), "values").json()
    assert body["rows"][0] == [1, "2.50", "NaN", True, "2024-07-01", "2024-07-01T10:00:00.5Z",
                               "2024-07-01T12:00:00", {"a": [1]}, ["x", None], None, "1 day",
                               1]
    assert [c["type"] for c in body["columns"]][:3] == ["bigint", "numeric",
                                                       "double precision"]
    assert body["rowCount"] == 3 and body["truncated"] is True
    exact = run(runner(corpus), "values", {"n": 3}).json()
    assert exact["rowCount"] == 3 and exact["truncated"] is False


def test_a_template_the_set_does_not_list_or_retired_is_not_found(corpus: Namespaced) -> None:
    registered(corpus, "other", "SELECT 1 AS one")
    agent = runner(corpus)
    missing = {"code": "NOT_FOUND", "message": "query template not found"}
    assert run(agent, "other").json() == missing
    assert corpus.as_("user:alice").delete(
        f"/v1/namespaces/{corpus.ns}/query-templates/passages").status_code == 204
    resp = run(agent, "passages")
    assert resp.status_code == 404 and resp.json() == missing


def test_every_run_is_recorded_without_parameter_values(
        corpus: Namespaced, container: bootstrap.Container) -> None:
    agent = runner(corpus)
    assert run(agent, "passages", {"collection": "secret-value-x"}).status_code == 200
    recorded = [r for r in container.store.read(0, 1_000_000)
                if r.stream.kind == "query_run" and r.stream.namespace == corpus.ns]
    assert len(recorded) == 1
    event: Any = recorded[0].event
    assert (event.template_id, event.template_version, event.context_set_id,
            event.outcome, event.sqlstate, event.row_count) == ("passages", 1, "finance",
                                                                "ok", "", 0)
    assert len(event.parameters_sha256) == 64 and len(event.run_id) == 16
    assert event.created_by == "user:alice"
    assert "secret-value-x" not in repr(event)


def test_an_empty_result_still_names_its_columns(corpus: Namespaced) -> None:
    body = run(runner(corpus), "passages", {"collection": "nothing-here"}).json()
    assert body["rows"] == [] and [c["name"] for c in body["columns"]] == [
        "collection_id", "record_id", "ordinal", "title"]
