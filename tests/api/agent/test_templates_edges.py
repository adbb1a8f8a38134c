"""Edges of ``POST /api/agent/v1/query-templates/run`` (agent-context-api.md §11.4, §1.7): a run
recorded whatever its outcome answers with the position of its record, a ``number`` is bound
from its decimal text, and a ``timestamp`` is any RFC 3339 timestamp with a zone. Each test
runs in a workspace of its own on the module's one service."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from context_service import bootstrap
from context_service.domain.errors import QueryTemplateRefusedError
from context_service.domain.query_template.commands import TemplateDraft
from context_service.domain.query_template.validation import rewrite
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent.templates_namespaced import approve, registered, runner, seeded
from tests.api.agent.templates_support import RUN, run
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]


@pytest.fixture
def corpus(api: Api) -> Namespaced:
    """A workspace of the test's own with the pack corpus and the templates below approved."""
    own = seeded(namespaced(api, "acme"))
    registered(own, "number", "SELECT :x AS x", [{"name": "x", "type": "number"}])
    registered(own, "instant", "SELECT :t AS t", [{"name": "t", "type": "timestamp"}])
    registered(own, "bounds", "SELECT :t < TIMESTAMPTZ '0001-01-01 00:00:00+00' AS before,"
                              " :t > TIMESTAMPTZ '9999-12-31 23:59:59+00' AS after",
               [{"name": "t", "type": "timestamp", "required": True}])
    registered(own, "text", "SELECT :v AS v, :v = 'a' AS cut", [{"name": "v", "type": "text"}])
    registered(own, "fails", "SELECT (:v)::int AS n FROM passages",
               [{"name": "v", "type": "text"}])
    registered(own, "slow", "SELECT count(*) AS n FROM generate_series(1, 10000000000) g"
                            " WHERE :v IS NOT NULL", [{"name": "v", "type": "text"}],
               timeoutMs=200)
    approve(own, ["number", "instant", "bounds", "text", "fails", "slow"])
    return own


def rows(corpus: Namespaced, template: str, parameters: dict[str, Any]) -> list[list[Any]]:
    resp = run(runner(corpus), template, parameters)
    assert resp.status_code == 200, resp.text
    found: list[list[Any]] = resp.json()["rows"]
    return found


def runs_of(container: bootstrap.Container, ns: str) -> dict[int, Any]:
    return {r.position: r.event for r in container.store.read(0, 1_000_000)
            if r.stream.kind == "query_run" and r.stream.namespace == ns}


def test_a_failed_or_timed_out_run_answers_with_the_position_of_its_record(
        corpus: Namespaced, container: bootstrap.Container) -> None:
    agent = runner(corpus)
    for template, status, outcome in (("fails", 400, "failed"), ("slow", 504, "timeout")):
        resp = run(agent, template, {"v": "nope"})
        assert resp.status_code == status, resp.text
        assert resp.headers["Cache-Control"] == "no-store"
        position = int(resp.headers["X-Context-Position"])
        recorded = runs_of(container, corpus.ns)[position]
        assert (recorded.template_id, recorded.outcome) == (template, outcome)
    ok = run(agent, "number", {"x": 1})
    assert ok.status_code == 200
    assert runs_of(container, corpus.ns)[int(ok.headers["X-Context-Position"])].outcome == "ok"


def test_a_number_is_bound_from_its_decimal_text(corpus: Namespaced,
                                                  container: bootstrap.Container) -> None:
    agent = runner(corpus)
    for sent, shown in (("12345678901234567890.125", "12345678901234567890.125"),
                        ("0.1", "0.1"), ("1E-7", "0.0000001"), ("-2.50", "-2.50"),
                        ("7", "7"), ("1E+3", "1000")):
        raw = f'{{"templateId":"number","contextSetId":"finance","parameters":{{"x":{sent}}}}}'
        resp = agent.post(RUN, raw=raw.encode())
        assert resp.status_code == 200, resp.text
        assert resp.json()["rows"] == [[shown]], sent
        recorded = runs_of(container, corpus.ns)[int(resp.headers["X-Context-Position"])]
        # the hash covers the number as it was sent, not a double's approximation of it
        assert recorded.parameters_sha256 == hashlib.sha256(
            f'{{"x":{sent}}}'.encode()).hexdigest(), sent
    bad = run(agent, "number", {"x": "1"})
    assert bad.status_code == 400
    assert bad.json()["details"] == [{"path": "$.parameters.x", "message": "must be a number"}]


def test_a_timestamp_with_any_rfc_3339_offset_is_bound_as_its_instant(
        corpus: Namespaced) -> None:
    for sent, shown in (("2024-01-01T10:00:00+23:59", "2023-12-31T10:01:00Z"),
                        ("2024-01-01T10:00:00-20:00", "2024-01-02T06:00:00Z"),
                        ("2024-03-01t01:30:00.1234567+16:00", "2024-02-29T09:30:00.123457Z"),
                        ("2024-07-01 12:00:00.5+02:00", "2024-07-01T10:00:00.5Z"),
                        ("2024-07-01T12:00:00z", "2024-07-01T12:00:00Z")):
        assert rows(corpus, "instant", {"t": sent}) == [[shown]], sent
    # across the first and the last year of the calendar: an instant before year 1, and one
    # after year 9999, still bound exactly
    assert rows(corpus, "bounds", {"t": "0001-01-01T10:00:00+20:00"}) == [[True, False]]
    assert rows(corpus, "bounds", {"t": "9999-12-31T20:00:00-20:00"}) == [[False, True]]
    assert rows(corpus, "bounds", {"t": "0001-01-01T00:00:00Z"}) == [[False, False]]


def test_a_text_with_nul_is_bound_as_the_views_hold_it_never_cut_short(
        corpus: Namespaced) -> None:
    # PostgreSQL text cannot hold NUL: the agent views show it as U+FFFD, and a value bound
    # as sent would end at the NUL and match what "a" matches
    assert rows(corpus, "text", {"v": "a\u0000b"}) == [["a\ufffdb", False]]
    assert rows(corpus, "text", {"v": "a"}) == [["a", True]]


@pytest.mark.parametrize("space", ["\u00a0", "\u2003", "\u3000", "\x1c"])
def test_only_the_databases_white_space_leads_a_statement(space: str) -> None:
    # check 7 must not pass what the database reads as no statement at all: a space the
    # database does not skip is refused with check 7's message, not later as a syntax error
    with pytest.raises(QueryTemplateRefusedError) as caught:
        rewrite(TemplateDraft(description="d", sql=f"{space}SELECT 1"))
    assert caught.value.message == ("invalid query template: sql must be a single SELECT or"
                                    " WITH statement")
    assert rewrite(TemplateDraft(description="d", sql=" \t\n\r\f\vSELECT 1")).endswith("SELECT 1")
