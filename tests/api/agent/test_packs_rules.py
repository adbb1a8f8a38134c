"""The pack routes' body rules and context-set checks over HTTP (agent-context-api.md §7.1,
§7.2 step 7, §3.5): every limit at and beyond its edge with the spec's message, every violation
reported in order, the same rules on the stream route, and the 403/404 of context-set scope."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.agent.own_workspace import agent_reading as agent_reading  # the fixtures
from tests.api.agent.own_workspace import own_with_members as own_with_members
from tests.api.agent.packs_support import PACKS, STREAM, Agent, violations
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.conftest import each
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import archive_set, create_set, token

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
SET_NOT_FOUND = {"code": "NOT_FOUND", "message": "context set not found"}


def _task(**body: Any) -> dict[str, Any]:
    return {"task": "Who is the current CFO?", **body}


def test_every_violation_is_reported_in_the_order_of_the_rules(agent: Agent) -> None:
    body = {"task": "   ",
            "budget": {"maxTokens": 255, "maxLatencyMs": 60001, "coverage": "all"},
            "asOf": {"validTime": "2025-01-01T00:00:00", "systemTime": "2999-01-01T00:00:00Z"},
            "filters": {"collectionIds": ["a", "", "c", "d", "e", "f", "g", "h", "i"],
                        "documentIds": ["a/b"] * 18 + ["nope", "/x", "c/"],
                        "sources": ["passages", "pictures"]},
            "retrieval": "dense", "contextSetId": ""}
    for path in (PACKS, STREAM):
        assert violations(agent.post(path, body)) == [
            {"path": "$.task", "message": "must not be blank"},
            {"path": "$.budget.maxTokens", "message": "must be between 256 and 32000"},
            {"path": "$.budget.maxLatencyMs", "message": "must be between 1000 and 60000"},
            {"path": "$.budget.coverage", "message": "must be best_effort or require_complete"},
            {"path": "$.asOf.validTime", "message": "must be an RFC 3339 timestamp with a zone"},
            {"path": "$.asOf.systemTime", "message": "must not be later than the request"},
            {"path": "$.filters.collectionIds", "message": "must have at most 8 entries"},
            {"path": "$.filters.collectionIds[1]", "message": "must not be empty"},
            {"path": "$.filters.documentIds", "message": "must have at most 20 entries"},
            *({"path": f"$.filters.documentIds[{i}]",
               "message": "must be <collectionId>/<file> or <collectionId>/#<recordId>"}
              for i in (18, 19, 20)),
            {"path": "$.filters.sources[1]", "message": "must be passages, graph or documents"},
            {"path": "$.retrieval", "message": "must be hybrid or lexical"},
            {"path": "$.contextSetId", "message": "must not be empty"},
        ]


@pytest.mark.parametrize(("body", "path", "message"), [
    ({}, "$.task", "is required"),
    ({"task": None}, "$.task", "is required"),
    ({"task": ""}, "$.task", "must not be blank"),
    ({"task": "x" * 4001}, "$.task", "must be 1 to 4000 characters"),
    ({"task": "\U0001F600" * 4001}, "$.task", "must be 1 to 4000 characters"),
    (_task(budget={"maxTokens": 32001}), "$.budget.maxTokens", "must be between 256 and 32000"),
    (_task(budget={"maxLatencyMs": 999}), "$.budget.maxLatencyMs",
     "must be between 1000 and 60000"),
    (_task(asOf={"systemTime": "yesterday"}), "$.asOf.systemTime",
     "must be an RFC 3339 timestamp with a zone"),
    (_task(asOf={"validTime": "2025-02-30T00:00:00Z"}), "$.asOf.validTime",
     "must be an RFC 3339 timestamp with a zone"),
    (_task(filters={"sources": []}), "$.filters.sources", "must not be empty"),
    (_task(filters={"documentIds": ["facts"]}), "$.filters.documentIds[0]",
     "must be <collectionId>/<file> or <collectionId>/#<recordId>"),
    (_task(filters={"collectionIds": [""]}), "$.filters.collectionIds[0]", "must not be empty"),
])
def test_each_rule_answers_its_message(agent: Agent, body: dict[str, Any], path: str,
                                       message: str) -> None:
    assert violations(agent.post(PACKS, body)) == [{"path": path, "message": message}]


def test_values_at_the_edges_pass_the_rules(agent: Agent) -> None:
    """Accepted bodies go past the field rules (they meet the set check of step 7 here)."""
    edges = [
        _task(task="x" * 4000), _task(task="\U0001F600" * 4000),
        _task(budget={"maxTokens": 256, "maxLatencyMs": 1000, "coverage": "best_effort"}),
        _task(budget={"maxTokens": 32000, "maxLatencyMs": 60000,
                      "coverage": "require_complete"}),
        _task(asOf={"validTime": "2025-01-01T00:00:00+05:30",
                    "systemTime": "2025-01-01T00:00:00.123456789z"}),
        _task(filters={"collectionIds": ["a"] * 8, "documentIds": ["a/#r"] * 20,
                       "sources": ["graph", "graph"]}),
        _task(retrieval="lexical"), _task(retrieval="hybrid"),
        _task(budget=None, asOf=None, filters=None, retrieval=None),
    ]

    def probe(body: dict[str, Any]) -> None:
        resp = agent.post(PACKS, {**body, "contextSetId": "no-such-set"})
        assert (resp.status_code, resp.json()) == (404, SET_NOT_FOUND), resp.text

    each(edges, probe)


@pytest.mark.parametrize("raw", [
    b'{"task": 3}', b'{"task": "t", "budget": {"maxTokens": 300.0}}',
    b'{"task": "t", "budget": {"maxTokens": "300"}}', b'{"task": "t", "extra": 1}',
    b'{"task": "t", "filters": {"collectionIds": "a"}}', b'{"task": "t", "asOf": {"x": 1}}',
    b'[]', b'{"task": "t"} {}',
])
def test_bodies_that_do_not_decode_answer_invalid_request(agent: Agent, raw: bytes) -> None:
    for path in (PACKS, STREAM):
        resp = agent.post(path, raw=raw)
        assert resp.status_code == 400 and resp.json()["code"] == "INVALID_REQUEST", resp.text


def test_framing_messages_are_exact(agent: Agent) -> None:
    for raw, message in ((b"", "request body is required"), (b"  \n", "request body is required"),
                         (b" " * (1024 * 1024 + 1), "request body too large")):
        resp = agent.post(PACKS, raw=raw)
        assert resp.json() == {"code": "INVALID_REQUEST", "message": message}


def test_a_bound_credential_naming_another_set_is_forbidden(own: Namespaced) -> None:
    create_set(own, "finance")
    create_set(own, "legal")
    bound = Agent(own, token(own, context_set_id="finance"))
    refused = {"code": "FORBIDDEN",
               "message": 'agent credential is bound to context set "finance"'}
    for path in (PACKS, STREAM):
        for named in ("legal", "no-such-set"):
            resp = bound.post(path, _task(contextSetId=named))
            assert (resp.status_code, resp.json()) == (403, refused)
    # the body rules come first
    resp = bound.post(PACKS, _task(contextSetId="legal", budget={"maxTokens": 1}))
    assert violations(resp) == [{"path": "$.budget.maxTokens",
                                 "message": "must be between 256 and 32000"}]


def test_unknown_and_archived_sets_are_not_found(own: Namespaced) -> None:
    create_set(own, "finance")
    create_set(own, "old")
    bound_to_old = Agent(own, token(own, context_set_id="old"))
    archive_set(own, "old")
    unbound = Agent(own, token(own))
    cases = [(unbound, "old"), (unbound, "nope"), (bound_to_old, "old")]
    for agent, named in cases:
        for path in (PACKS, STREAM):
            resp = agent.post(path, _task(contextSetId=named))
            assert (resp.status_code, resp.json()) == (404, SET_NOT_FOUND), (named, resp.text)


def test_nul_and_unusual_strings_answer_without_failing(agent: Agent) -> None:
    """Strings the views could not hold as text are only compared, never stored or queried."""
    cases = [_task(task="a\u0000b"), _task(filters={"collectionIds": ["a\u0000"]}),
             _task(filters={"documentIds": ["a/\u0000", "\u0000/#x"]}),
             _task(contextSetId="\u0000"), _task(task="\ud800 lone surrogate"),
             _task(budget={"maxTokens": 10**30})]
    for body in cases:
        resp = agent.post(PACKS, raw=json.dumps(body).encode())
        assert resp.status_code in (200, 400, 404), resp.text
