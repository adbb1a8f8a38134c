"""The studied-field routes over HTTP (agent-context-api §10): the listing with coverage, rows
with live citations, filters, sorts, aggregates with money kept per currency, and knownAt
reading the index the service knew at the end of a day."""

from __future__ import annotations

from typing import Any

import pytest

from context_service import bootstrap
from tests.api.agent.fields_support import (
    LIST,
    QUERY,
    REV2,
    C,
    contracts,
    field,
    money,
    seed,
)
from tests.api.agent.packs_support import Agent, publish, record
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.conftest import Api

pytestmark = pytest.mark.postgres


@pytest.fixture
def agent(api: Api) -> Agent:
    return seed(api)


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


def _shift_day(container: bootstrap.Container, days: int) -> None:
    """Make every pack input recorded so far look recorded ``days`` days earlier."""
    head = container.store.head()
    for runner in container.runners.values():
        assert runner.wait_for(head, timeout=30)
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("UPDATE pack_inputs SET recorded_at = recorded_at - make_interval(days => %s)",
                    (days,))


def test_known_at_answers_the_index_of_that_day_cited_live(
        agent: Agent, api: Api, container: bootstrap.Container) -> None:
    _shift_day(container, 3)
    corrected = contracts("EUR 99,000.00")
    corrected[0]["fields"][0]["value"] = money("99000.00", "EUR")
    corrected = [r for r in corrected if r["id"] != "globex-p1"]
    for r in corrected:
        r["revision"] = REV2
    publish(api, C, REV2, corrected)
    plan = {"collectionId": C, "fields": ["total_value"],
            "filters": [{"field": "total_value", "op": "exists", "value": True}]}
    past = ok(agent, QUERY, {**plan, "knownAt": _day(-2)})
    assert past["knownAt"] == _day(-2)
    values = {r["documentId"]: r["values"][0] for r in past["rows"]}
    assert values["contracts/acme-2024.pdf"]["value"] == money("120000.00", "EUR")
    assert values["contracts/acme-2024.pdf"]["uncitedReason"] == "span_changed"
    assert values["contracts/globex-2023.pdf"]["uncitedReason"] == "record_unavailable"
    assert values["contracts/initech.pdf"]["citation"]["quote"] == "EUR 5.5"
    now = ok(agent, QUERY, plan)
    assert now["rows"][0]["values"][0]["value"] == money("99000.00", "EUR")
    assert now["rows"][0]["values"][0]["citation"]["quote"] == "EUR 99,000.00"
    # before the collection existed it has no documents, so no fields to name
    before = agent.post(QUERY, {**plan, "knownAt": "2000-01-01"}).json()
    assert before["details"][0] == {"path": "$.fields[0]",
                                    "message": 'unknown field "total_value"'}
    count = ok(agent, QUERY, {"collectionId": C, "knownAt": "2000-01-01",
                              "aggregate": {"functions": [{"op": "count"}]}})
    assert count["documents"] == 0 and count["aggregates"]["groups"][0]["count"] == 0


def test_an_unusable_index_answers_no_documents_and_leaves_citations_unavailable(
        agent: Agent, api: Api, container: bootstrap.Container) -> None:
    _shift_day(container, 3)
    resp = api.as_("user:alice").post(f"/v1/namespaces/acme/contexts/{C}/revisions", {
        "id": REV2, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync"})
    assert resp.status_code == 201, resp.text
    assert ok(agent, LIST, {"collectionId": C})["documents"] == 0
    past = ok(agent, QUERY, {"collectionId": C, "fields": ["total_value"],
                             "knownAt": _day(-1)})
    assert {r["values"][0]["uncitedReason"] for r in past["rows"] if r["values"][0]} == {
        "record_unavailable"}


def test_a_collection_no_longer_readable_is_not_found(agent: Agent, api: Api) -> None:
    from tests.api.agent.packs_support import grant, revoke
    from tests.api.sets_support import token
    grant(api, C, "user:adam", "read")
    adam = Agent(api, token(api, creator="user:adam"))
    assert ok(adam, LIST, {"collectionId": C})["documents"] == 4
    revoke(api, C, "user:adam")
    for path, body in ((LIST, {"collectionId": C}),
                       (QUERY, {"collectionId": C, "fields": ["region"]})):
        resp = adam.post(path, body)
        assert resp.status_code == 404
        assert resp.json() == {"code": "NOT_FOUND", "message": 'collection "contracts" not found'}


def test_a_record_id_with_nul_is_kept_exactly(agent: Agent, api: Api) -> None:
    publish(api, C, REV2, [record("a\u0000b", C, REV2, "x\u0000y", fields=[
        field("note", "text", "nul\u0000here", (0, 3))])])
    body = ok(agent, QUERY, {"collectionId": C, "fields": ["note"],
                             "filters": [{"field": "note", "op": "eq", "value": "nul\u0000here"}]})
    assert body["rows"] == [{"documentId": "contracts/#a\u0000b", "values": [
        {"value": "nul\u0000here", "recordId": "a\u0000b", "citation": {
            "recordId": "a\u0000b", "documentId": "contracts/#a\u0000b", "start": 0, "end": 3,
            "quote": "x\u0000y"}}]}]


def _day(offset: int) -> str:
    from datetime import UTC, datetime, timedelta
    return (datetime.now(UTC) + timedelta(days=offset)).date().isoformat()


def test_values_of_a_collection_ungranted_while_the_plan_ran_are_uncited(
        agent: Agent, api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    from context_service.http.agent import fields as route
    from tests.api.agent.packs_support import grant, revoke
    from tests.api.sets_support import token
    grant(api, C, "user:adam", "read")
    adam = Agent(api, token(api, creator="user:adam"))
    plan = {"collectionId": C, "fields": ["total_value"]}
    before = ok(adam, QUERY, plan)
    assert any(r["values"][0] and r["values"][0]["citation"] for r in before["rows"])
    real = route.answer

    def revoking(*args: Any, **kwargs: Any) -> Any:  # the grant goes while the plan runs
        revoke(api, C, "user:adam")
        return real(*args, **kwargs)

    monkeypatch.setattr(route, "answer", revoking)
    during = ok(adam, QUERY, plan)
    values = [r["values"][0] for r in during["rows"] if r["values"][0]]
    assert [v["value"] for v in values] == [
        r["values"][0]["value"] for r in before["rows"] if r["values"][0]]
    assert {(v["citation"], v.get("uncitedReason")) for v in values} <= {
        (None, "record_unavailable"), (None, "no_span")}
    assert any(v.get("uncitedReason") == "record_unavailable" for v in values)
    monkeypatch.setattr(route, "answer", real)
    assert adam.post(QUERY, plan).status_code == 404  # and from now on it is not found
