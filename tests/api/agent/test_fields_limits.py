"""Every limit of the field routes at and past its edge, and the order of checks: body rules
(every violation, in order), then the collection, then the plan rules (agent-context-api
§10.3, §10.4). One service for the module: each test reads a workspace of its own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.api.agent.fields_support import LIST, QUERY, REV2, C, field
from tests.api.agent.fields_support import agent as agent  # the fixture
from tests.api.agent.fields_support import own as own  # the fixture
from tests.api.agent.packs_support import Agent, publish, record, violations
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
TODAY = datetime.now(UTC).date()


def details(agent: Agent, body: dict[str, Any], path: str = QUERY) -> list[tuple[str, str]]:
    return [(d["path"], d["message"]) for d in violations(agent.post(path, body))]


def status(agent: Agent, body: dict[str, Any]) -> int:
    code: int = agent.post(QUERY, body).status_code
    return code


def test_body_rules_in_order_with_their_messages(agent: Agent) -> None:
    assert details(agent, {}) == [("$.collectionId", "is required"),
                                  ("$", "fields or aggregate is required")]
    assert details(agent, {"collectionId": ""}, LIST) == [("$.collectionId", "must not be empty")]
    assert details(agent, {"collectionId": "", "fields": ["a", "b", "a"],
                           "filters": [{"field": "a", "op": "like", "value": 1}, {}],
                           "sort": {"field": "a", "direction": "up"}, "limit": 0,
                           "aggregate": {"functions": [{"op": "sum"}, {"op": "median"}]},
                           "knownAt": "2026-02-30"}) == [
        ("$.collectionId", "must not be empty"), ("$.fields[2]", "is a duplicate"),
        ("$.filters[0].op", "must be eq, ne, lt, lte, gt, gte, contains, prefix or exists"),
        ("$.filters[1].field", "is required"), ("$.filters[1].op", "is required"),
        ("$.sort.direction", "must be asc or desc"), ("$.limit", "must be between 1 and 200"),
        ("$.aggregate.functions[0].field", "is required"),
        ("$.aggregate.functions[1].op", "must be count, min, max, sum or avg"),
        ("$.knownAt", "must be a date YYYY-MM-DD")]
    assert details(agent, {"collectionId": C, "fields": []}) == [
        ("$", "fields or aggregate is required")]
    resp = agent.post(QUERY, {"collectionId": C, "fields": "region"})
    assert resp.status_code == 400 and resp.json()["code"] == "INVALID_REQUEST"
    resp = agent.post(QUERY, {"collectionId": C, "fields": ["region"], "extra": 1})
    assert resp.status_code == 400 and resp.json()["code"] == "INVALID_REQUEST"


def test_counts_at_and_past_their_edges(agent: Agent) -> None:
    six = [f"f{i}" for i in range(6)]
    # at the edge the body passes and the plan rules speak; past it the body rule does
    assert details(agent, {"collectionId": C, "fields": six})[0] == (
        "$.fields[0]", 'unknown field "f0"')
    assert details(agent, {"collectionId": C, "fields": [*six, "f6"]}) == [
        ("$.fields", "must have at most 6 entries")]
    six_filters = [{"field": "region", "op": "exists", "value": True}] * 6
    assert status(agent, {"collectionId": C, "fields": ["region"],
                          "filters": six_filters}) == 200
    assert details(agent, {"collectionId": C, "fields": ["region"],
                           "filters": [*six_filters, six_filters[0]]}) == [
        ("$.filters", "must have at most 6 entries")]
    for limit, ok in ((1, True), (200, True), (0, False), (201, False)):
        body = {"collectionId": C, "fields": ["region"], "limit": limit}
        assert (status(agent, body) == 200) is ok
    functions = [{"op": "count"}] * 6
    assert status(agent, {"collectionId": C, "aggregate": {"functions": functions}}) == 200
    for wrong in ([], [*functions, {"op": "count"}]):
        assert details(agent, {"collectionId": C, "aggregate": {"functions": wrong}}) == [
            ("$.aggregate.functions", "must have 1 to 6 entries")]
    assert details(agent, {"collectionId": C, "aggregate": {}}) == [
        ("$.aggregate.functions", "must have 1 to 6 entries")]


def test_known_at_up_to_today(agent: Agent) -> None:
    today = {"collectionId": C, "fields": ["region"], "knownAt": TODAY.isoformat()}
    assert agent.post(QUERY, today).json()["matched"] == 4
    tomorrow = (TODAY + timedelta(days=1)).isoformat()
    assert details(agent, {**today, "knownAt": tomorrow}) == [
        ("$.knownAt", "must not be later than today (UTC)")]
    assert details(agent, {**today, "knownAt": "2026-1-01"}) == [
        ("$.knownAt", "must be a date YYYY-MM-DD")]


def test_collection_before_plan_rules_then_plan_rules(agent: Agent) -> None:
    resp = agent.post(QUERY, {"collectionId": "nope", "fields": ["nothing"]})
    assert resp.status_code == 404
    assert resp.json() == {"code": "NOT_FOUND", "message": 'collection "nope" not found'}
    assert details(agent, {
        "collectionId": C, "fields": ["region", "nothing"],
        "filters": [{"field": "renewal", "op": "lt", "value": True},
                    {"field": "score", "op": "eq", "value": "1"},
                    {"field": "region", "op": "exists", "value": "yes"},
                    {"field": "total_value", "op": "eq", "value": {"amount": "1"}},
                    {"field": "contract_end", "op": "gt", "value": "2026-02-30"}],
        "sort": {"field": "gone"},
        "aggregate": {"groupBy": "total_value", "functions": [
            {"op": "sum", "field": "region"}, {"op": "min", "field": "renewal"},
            {"op": "avg", "field": "missing"}]}}) == [
        ("$.fields[1]", 'unknown field "nothing"'), ("$.sort.field", 'unknown field "gone"'),
        ("$.aggregate.functions[2].field", 'unknown field "missing"'),
        ("$.filters[0].op", "operator lt does not apply to boolean fields"),
        ("$.filters[1].value", "value must be a number value"),
        ("$.filters[2].value", "value must be a boolean value"),
        ("$.filters[3].value", "value must be a money value"),
        ("$.filters[4].value", "value must be a date value"),
        ("$.aggregate.functions[0].op", "sum does not apply to text fields"),
        ("$.aggregate.functions[1].op", "min does not apply to boolean fields"),
        ("$.aggregate.groupBy", "cannot group by a money field")]


def test_groups_and_rows_past_their_caps(agent: Agent, own: Namespaced) -> None:
    records = [record(f"r{i:03}", C, REV2, f"record {i}", fields=[
        field("bucket", "number", i % 51), field("tag", "text", "x" * (i % 3))])
        for i in range(255)]
    publish(own, C, REV2, records, ws=own.ns)
    grouped = agent.post(QUERY, {"collectionId": C, "fields": ["bucket"], "limit": 200,
                                 "aggregate": {"groupBy": "bucket",
                                               "functions": [{"op": "count"}]}}).json()
    agg = grouped["aggregates"]
    assert agg["groupCount"] == 51 and agg["groupsTruncated"] is True
    assert len(agg["groups"]) == 50 and all(g["count"] == 5 for g in agg["groups"])
    assert [g["key"] for g in agg["groups"]] == list(range(50))  # ties by key ascending
    assert grouped["rowCount"] == 200 and grouped["truncated"] is True
    assert grouped["matched"] == 255
    fifty = agent.post(QUERY, {"collectionId": C, "aggregate": {
        "groupBy": "bucket", "functions": [{"op": "count"}]},
        "filters": [{"field": "bucket", "op": "lt", "value": 50}]}).json()["aggregates"]
    assert fifty["groupCount"] == 50 and fifty["groupsTruncated"] is False
    exact = agent.post(QUERY, {"collectionId": C, "fields": ["tag"], "limit": 85,
                               "filters": [{"field": "tag", "op": "eq", "value": "x"}]}).json()
    assert exact["matched"] == 85 and exact["truncated"] is False
    assert exact["rows"][0]["documentId"] == "contracts/#r001"
