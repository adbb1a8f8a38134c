"""The library routes (agent-context-api.md §9): the context sets a credential may see, one set
as an agent reads it, definitions by term and verified answers by question, with the
deterministic word matching of §9.2.

Each route runs the bearer pipeline first (which also waits for the context_sets view, so a set
written before the request is seen), then its body rules, then context-set scope (§3.5).
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post

from context_service.contract.agent import (
    AgentContextSet,
    AnswerMatches,
    ContextSetList,
    DefinitionMatches,
    GetContextSetRequest,
    ListContextSetsRequest,
    LookupDefinitionsRequest,
    MatchVerifiedAnswersRequest,
)
from context_service.contract.agent_errors import SHARED_ERRORS
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.library.matching import lookup_definitions, match_answers, rank_sets
from context_service.domain.library.scope import named_set, searched_sets, visible_sets
from context_service.domain.query_template.state import QueryTemplateState
from context_service.http.agent import library_shapes as shapes
from context_service.http.agent.body import decode
from context_service.http.agent.errors import api_json
from context_service.http.agent.late_body import PendingBody, body_after_pipeline
from context_service.http.agent.pipeline import AgentCaller, authenticate
from context_service.http.common import services
from context_service.http.refusals import refusals
from context_service.projections.context_sets.view import ContextSetReads

PATH = "/api/agent/v1"
SCOPE = "context:read"
VIEWS = ("context_sets",)
GET_VIEWS = (*VIEWS, "query_templates")  # the set's templates are read as of the request too
# what the library routes answer besides their answer (the document states each, as it does for
# every other agent route): ``list`` names no context set, so it has no 404
_REFUSED = {400: "INVALID_REQUEST or VALIDATION_ERROR (details: every violated field rule)",
            401: "UNAUTHORIZED or EXPIRED_CREDENTIAL",
            403: "AGENT_BROWSER_REQUEST_REFUSED, FORBIDDEN (scope) or "
                 "AGENT_CREDENTIAL_AUTHORITY_LOST",
            404: "NOT_FOUND: context set not found",
            429: "RATE_LIMITED (Retry-After)",
            503: "SERVICE_UNAVAILABLE: the views could not catch up with the log in time"}
ERRORS = refusals(_REFUSED, SHARED_ERRORS)
LIST_ERRORS = refusals({k: v for k, v in _REFUSED.items() if k != 404}, SHARED_ERRORS)


class _Scope:
    """The caller's workspace sets, read from the view (each at most once per request)."""

    def __init__(self, reads: ContextSetReads, agent: AgentCaller) -> None:
        self.reads = reads
        self.workspace = agent.workspace
        self.bound = agent.context_set_id

    def get(self, set_id: str) -> ContextSetState | None:
        return self.reads.get(self.workspace, set_id)

    def listing(self) -> list[ContextSetState]:
        return list(self.reads.list(self.workspace))


def _caller(request: Request[Any, Any, Any],
            views: tuple[str, ...] = VIEWS) -> tuple[AgentCaller, _Scope]:
    agent = authenticate(request, SCOPE, views)
    found = services(request).context_sets
    assert found is not None, "context sets are not configured"
    return agent, _Scope(found.reads, agent)


@post(PATH + "/context-sets/list", status_code=200,
      opt={"body": ListContextSetsRequest}, responses=LIST_ERRORS)
@body_after_pipeline
def list_context_sets(request: Request[Any, Any, Any],
                      body: PendingBody) -> Response[ContextSetList]:
    """The context sets the credential may see; ranked by word match with a ``query``."""
    _, scope = _caller(request)
    req = decode(body, ListContextSetsRequest)
    shapes.check_list(req)
    limit = req.limit or shapes.SET_DEFAULT
    sets = visible_sets(scope.bound, scope.get, scope.listing)
    if req.query is None or not req.query.strip():
        return api_json({"items": [shapes.set_summary(s) for s in sets[:limit]]})
    ranked = rank_sets(req.query, sets)[:limit]
    return api_json({"items": [shapes.set_summary(m.state, m) for m in ranked]})


@post(PATH + "/context-sets/get", status_code=200, opt={"body": GetContextSetRequest},
      responses=ERRORS)
@body_after_pipeline
def get_context_set(request: Request[Any, Any, Any],
                    body: PendingBody) -> Response[AgentContextSet]:
    """One context set as an agent reads it (the bound set when none is named)."""
    _, scope = _caller(request, GET_VIEWS)
    req = decode(body, GetContextSetRequest)
    shapes.check_get(req, scope.bound)
    state = named_set(scope.bound, req.context_set_id or scope.bound, scope.get)
    return api_json(shapes.agent_view(state, _active_templates(request, scope, state)))


def _active_templates(request: Request[Any, Any, Any], scope: _Scope,
                      state: ContextSetState) -> list[QueryTemplateState]:
    """The set's templates that are still active, in the set's order (a retired one stays
    listed by the set but cannot be run, so an agent is not shown it)."""
    templates = services(request).query_templates
    if templates is None or not state.query_templates:
        return []
    found = (templates.reads.get(scope.workspace, t) for t in state.query_templates)
    return [t for t in found if t is not None and t.active]


@post(PATH + "/definitions/lookup", status_code=200,
      opt={"body": LookupDefinitionsRequest}, responses=ERRORS)
@body_after_pipeline
def lookup(request: Request[Any, Any, Any], body: PendingBody) -> Response[DefinitionMatches]:
    """Definitions of a term: exact term, exact alias, then word matches."""
    _, scope = _caller(request)
    req = decode(body, LookupDefinitionsRequest)
    shapes.check_lookup(req)
    assert req.term is not None
    sets = searched_sets(scope.bound, req.context_set_id, scope.get, scope.listing)
    found = lookup_definitions(req.term, sets)[:req.limit or shapes.MATCH_DEFAULT]
    return api_json({"items": [shapes.definition_match(m) for m in found]})


@post(PATH + "/verified-answers/match", status_code=200,
      opt={"body": MatchVerifiedAnswersRequest}, responses=ERRORS)
@body_after_pipeline
def match(request: Request[Any, Any, Any], body: PendingBody) -> Response[AnswerMatches]:
    """Verified answers whose question matches: exact first, then by word-match score."""
    _, scope = _caller(request)
    req = decode(body, MatchVerifiedAnswersRequest)
    shapes.check_match(req)
    assert req.question is not None
    sets = searched_sets(scope.bound, req.context_set_id, scope.get, scope.listing)
    found = match_answers(req.question, sets)[:req.limit or shapes.MATCH_DEFAULT]
    return api_json({"items": [shapes.answer_match(m) for m in found]})


ROUTES = [list_context_sets, get_context_set, lookup, match]
