"""The studied-field routes over HTTP on a service of the test's own (agent-context-api §10):
knownAt reading the index the service knew at the end of a day (the tests move every recorded
time of the service), and a grant gone while a plan runs (the route's answer step changed for
the test). The other field tests share one service (test_fields.py)."""

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
    money,
    seed,
)
from tests.api.agent.packs_support import Agent, publish
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
