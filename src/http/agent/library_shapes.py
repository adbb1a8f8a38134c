"""Field rules and answers of the library routes (agent-context-api.md §9.1).

The bodies are the contract's requests, whose bounds are documented there and checked by the
field rules below, so every violation is reported in ``details`` with the spec's message.
"""

from __future__ import annotations

from typing import Any

import msgspec

from context_service.contract.agent import (
    GetContextSetRequest,
    ListContextSetsRequest,
    LookupDefinitionsRequest,
    MatchVerifiedAnswersRequest,
)
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.library.matching import AnswerMatch, DefinitionMatch, SetMatch
from context_service.domain.query_template.state import QueryTemplateState
from context_service.domain.score import format_score
from context_service.domain.values import format_timestamp
from context_service.http.agent.body import Violations, check_range, check_text
from context_service.http.context_set_shapes import definition, items_of, verified_answer
from context_service.http.query_template_shapes import parameter_json

Json = dict[str, Any]
MAX_QUERY, MAX_TERM, MAX_QUESTION = 200, 200, 4000
SET_LIMIT, SET_DEFAULT = 100, 20
MATCH_LIMIT, MATCH_DEFAULT = 50, 5
UNBOUND_GET = "is required for a credential not bound to a context set"


# --- field rules, in each route's order ------------------------------------------------------

def _set_id(v: Violations, value: str | None) -> None:
    if value == "":
        v.add("$.contextSetId", "must not be empty")


def check_list(req: ListContextSetsRequest) -> None:
    v = Violations()
    if req.query is not None and len(req.query) > MAX_QUERY:
        v.add("$.query", f"must be at most {MAX_QUERY} characters")
    check_range(v, "$.limit", req.limit, 1, SET_LIMIT)
    v.raise_if_any()


def check_get(req: GetContextSetRequest, bound: str) -> None:
    v = Violations()
    _set_id(v, req.context_set_id)
    if req.context_set_id is None and not bound:
        v.add("$.contextSetId", UNBOUND_GET)
    v.raise_if_any()


def check_lookup(req: LookupDefinitionsRequest) -> None:
    v = Violations()
    check_text(v, "$.term", req.term, MAX_TERM)
    _set_id(v, req.context_set_id)
    check_range(v, "$.limit", req.limit, 1, MATCH_LIMIT)
    v.raise_if_any()


def check_match(req: MatchVerifiedAnswersRequest) -> None:
    v = Violations()
    check_text(v, "$.question", req.question, MAX_QUESTION)
    _set_id(v, req.context_set_id)
    check_range(v, "$.limit", req.limit, 1, MATCH_LIMIT)
    v.raise_if_any()


# --- answers ----------------------------------------------------------------------------------

def score(micros: int) -> msgspec.Raw:
    """A score written as the plain decimal of spec 1.8 (never an exponent)."""
    return msgspec.Raw(format_score(micros).encode())


def set_summary(state: ContextSetState, match: SetMatch | None = None) -> Json:
    out: Json = {"id": state.id, "name": state.name}
    if state.description:
        out["description"] = state.description
    out["version"] = state.version
    out["collections"] = list(state.collections)
    if match is not None:
        out["score"] = score(match.score)
    return out


def agent_view(state: ContextSetState, templates: list[QueryTemplateState]) -> Json:
    """The set as an agent reads it; ``templates`` are the set's active ones, listed without
    their SQL (omitted when there are none)."""
    out: Json = {"id": state.id, "name": state.name}
    if state.description:
        out["description"] = state.description
    out["version"] = state.version
    assert state.updated_at is not None
    out["updatedAt"] = format_timestamp(state.updated_at)
    out["collections"] = list(state.collections)
    out.update(items_of(state))
    if templates:
        out["queryTemplates"] = [agent_template(t) for t in templates]
    return out


def agent_template(state: QueryTemplateState) -> Json:
    """A template as an agent may read it: never its SQL."""
    return {"id": state.id, "description": state.description,
            "parameters": [parameter_json(p) for p in state.parameters],
            "maxRows": state.max_rows, "timeoutMs": state.timeout_ms}


def definition_match(m: DefinitionMatch) -> Json:
    return {"contextSetId": m.set_id, **definition(m.definition), "match": m.match,
            "score": score(m.score)}


def answer_match(m: AnswerMatch) -> Json:
    return {"contextSetId": m.set_id, **verified_answer(m.answer), "match": m.match,
            "score": score(m.score)}
