"""The studied-field routes over HTTP (agent-context-api §10): the listing with coverage, rows
with live citations, filters, sorts, aggregates with money kept per currency, a collection no
longer readable, and record ids kept exactly. Each test reads a workspace of its own; the knownAt
tests (which move every recorded time) and the grant gone while a plan runs are in
test_fields_service_wide.py."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.fields_support import LIST, QUERY, REV2, C, field, money
from tests.api.agent.fields_support import agent as agent  # the fixture
from tests.api.agent.fields_support import own as own  # the fixture
from tests.api.agent.packs_support import Agent, grant, publish, record, revoke
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import token

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]


def ok(agent: Agent, path: str, body: dict[str, Any]) -> Any:
    resp = agent.post(path, body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_list_answers_every_field_with_its_coverage(agent: Agent) -> None:
    body = ok(agent, LIST, {"collectionId": C})
    assert body == {
        "collectionId": C, "documents": 4,
        "fields": [
            {"name": "contract_end", "type": "date", "documents": 2, "coverage": 50},
            {"name": "region", "type": "text", "documents": 3, "coverage": 75},
            {"name": "renewal", "type": "boolean", "documents": 1, "coverage": 25},
            {"name": "score", "type": "number", "documents": 2, "coverage": 50},
            {"name": "total_value", "type": "money", "documents": 3, "coverage": 75,
             "currencies": ["EUR", "USD"]}],
        "coverageLines": ["contract_end: stated in 2 of 4 documents (50%)",
                          "region: stated in 3 of 4 documents (75%)",
                          "renewal: stated in 1 of 4 documents (25%)",
                          "score: stated in 2 of 4 documents (50%)",
                          "total_value: stated in 3 of 4 documents (75%)"],
        "incomplete": True}


def test_rows_carry_the_first_stating_record_and_live_citations(agent: Agent) -> None:
    body = ok(agent, QUERY, {"collectionId": C, "fields": ["total_value", "score"],
                             "filters": [{"field": "region", "op": "eq", "value": "EMEA"}],
                             "sort": {"field": "total_value", "direction": "desc"}})
    acme, globex = "contracts/acme-2024.pdf", "contracts/globex-2023.pdf"
    assert body["documents"] == 4 and body["matched"] == 2
    assert body["fields"] == [{"name": "total_value", "type": "money"},
                              {"name": "score", "type": "number"}]
    # money sorts by currency code, then amount: USD after EUR, so first when descending
    assert [r["documentId"] for r in body["rows"]] == [globex, acme]
    assert body["rows"][1]["values"] == [
        {"value": money("120000.00", "EUR"), "recordId": "acme-p1",
         "citation": {"recordId": "acme-p1", "documentId": acme, "start": 27, "end": 41,
                      "quote": "EUR 120,000.00"}}, None]
    assert body["rows"][0]["values"][1] == {"value": 2.5, "recordId": "globex-p1",
                                            "citation": None, "uncitedReason": "no_span"}
    assert body["rowCount"] == 2 and body["truncated"] is False
    assert "aggregates" not in body and "knownAt" not in body
    assert body["coverageLines"] == ["region: stated in 3 of 4 documents (75%)",
                                     "score: stated in 2 of 4 documents (50%)",
                                     "total_value: stated in 3 of 4 documents (75%)"]
    assert body["incomplete"] is True


def test_filters_by_type(agent: Agent) -> None:
    def matched(*filters: dict[str, Any]) -> list[str]:
        body = ok(agent, QUERY, {"collectionId": C, "fields": ["region"],
                                 "filters": list(filters)})
        return [r["documentId"].split("/")[1] for r in body["rows"]]

    assert matched({"field": "total_value", "op": "gt", "value": money("5.50", "EUR")}) == [
        "acme-2024.pdf"]
    # ne also matches every other currency; a document not stating the field never does
    assert matched({"field": "total_value", "op": "ne", "value": money("5.5", "EUR")}) == [
        "acme-2024.pdf", "globex-2023.pdf"]
    assert matched({"field": "total_value", "op": "exists", "value": False}) == ["#loose"]
    assert matched({"field": "region", "op": "contains", "value": "em"}) == [
        "acme-2024.pdf", "globex-2023.pdf"]
    assert matched({"field": "region", "op": "prefix", "value": "ap"}) == ["initech.pdf"]
    assert matched({"field": "contract_end", "op": "lt", "value": "2026-01-01"}) == [
        "initech.pdf"]
    assert matched({"field": "score", "op": "lte", "value": 1e-7},
                   {"field": "region", "op": "ne", "value": "EMEA"}) == ["initech.pdf"]
    assert matched({"field": "renewal", "op": "eq", "value": True}) == ["acme-2024.pdf"]


def test_aggregates_keep_currencies_apart(agent: Agent) -> None:
    body = ok(agent, QUERY, {"collectionId": C, "aggregate": {"groupBy": "region", "functions": [
        {"op": "count"}, {"op": "sum", "field": "total_value"},
        {"op": "avg", "field": "total_value"}, {"op": "max", "field": "total_value"},
        {"op": "min", "field": "score"}, {"op": "count", "field": "score"}]}})
    assert body["rows"] == [] and body["rowCount"] == 0 and body["matched"] == 4
    groups = body["aggregates"]["groups"]
    assert body["aggregates"]["groupBy"] == "region"
    assert [(g["key"], g["count"]) for g in groups] == [("EMEA", 2), ("APAC", 1), (None, 1)]
    emea = groups[0]["results"]
    assert emea[0] == {"op": "count", "value": 2}
    assert emea[1] == {"op": "sum", "field": "total_value", "values": [
        {"currency": "EUR", "amount": "120000.00"}, {"currency": "USD", "amount": "80000"}]}
    assert emea[2]["values"] == [{"currency": "EUR", "amount": "120000.0000"},
                                 {"currency": "USD", "amount": "80000.00"}]
    assert emea[3]["values"][1] == {
        "currency": "USD", "amount": "80000", "documentId": "contracts/globex-2023.pdf",
        "recordId": "globex-p1", "citation": {
            "recordId": "globex-p1", "documentId": "contracts/globex-2023.pdf", "start": 8,
            "end": 18, "quote": "USD 80,000"}}
    assert emea[4]["value"] == 2.5 and emea[4]["uncitedReason"] == "no_span"
    assert emea[5] == {"op": "count", "field": "score", "value": 1}
    assert groups[2]["results"][1] == {"op": "sum", "field": "total_value", "values": []}
    assert groups[2]["results"][4] == {"op": "min", "field": "score", "value": None}
    assert body["aggregates"]["groupCount"] == 3
    assert body["aggregates"]["groupsTruncated"] is False
    raw = agent.post(QUERY, {"collectionId": C, "fields": ["score"],
                             "filters": [{"field": "score", "op": "lt", "value": 1}]}).text
    assert '"value":1e-7' in raw


def test_a_collection_no_longer_readable_is_not_found(agent: Agent, own: Namespaced) -> None:
    grant(own, C, "user:adam", "read", ws=own.ns)
    adam = Agent(own, token(own, creator="user:adam"))
    assert ok(adam, LIST, {"collectionId": C})["documents"] == 4
    revoke(own, C, "user:adam", ws=own.ns)
    for path, body in ((LIST, {"collectionId": C}),
                       (QUERY, {"collectionId": C, "fields": ["region"]})):
        resp = adam.post(path, body)
        assert resp.status_code == 404
        assert resp.json() == {"code": "NOT_FOUND", "message": 'collection "contracts" not found'}


def test_a_record_id_with_nul_is_kept_exactly(agent: Agent, own: Namespaced) -> None:
    publish(own, C, REV2, [record("a\u0000b", C, REV2, "x\u0000y", fields=[
        field("note", "text", "nul\u0000here", (0, 3))])], ws=own.ns)
    body = ok(agent, QUERY, {"collectionId": C, "fields": ["note"],
                             "filters": [{"field": "note", "op": "eq", "value": "nul\u0000here"}]})
    assert body["rows"] == [{"documentId": "contracts/#a\u0000b", "values": [
        {"value": "nul\u0000here", "recordId": "a\u0000b", "citation": {
            "recordId": "a\u0000b", "documentId": "contracts/#a\u0000b", "start": 0, "end": 3,
            "quote": "x\u0000y"}}]}]
