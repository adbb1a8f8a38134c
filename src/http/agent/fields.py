"""The studied-field routes (agent-context-api §10): the fields of a collection, and a plan's
rows and aggregates with live citations. The collection must be readable now (§3.4); with
``knownAt`` the index is the one the service knew at the end of that UTC day.

Blocking: the routes run on the handlers' thread pool.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, post

from context_service.contract.agent import (
    FieldAnswer,
    FieldListing,
    ListFieldsRequest,
    QueryFieldsRequest,
)
from context_service.contract.agent_errors import SHARED_ERRORS
from context_service.domain.context_pack.readable import COLLECTION_TYPES
from context_service.domain.fields.answering import (
    HeadCitations,
    LiveCitations,
    ReadableCitations,
)
from context_service.domain.fields.engine import answer, listing
from context_service.domain.fields.memory import MemorySource
from context_service.domain.fields.plan import Plan, plan_violations
from context_service.domain.fields.source import Citations, FieldSource
from context_service.domain.pack.model import CollectionAt
from context_service.http.agent import fields_shapes as shapes
from context_service.http.agent.body import Violations, decode
from context_service.http.agent.errors import api_json
from context_service.http.agent.late_body import PendingBody, body_after_pipeline
from context_service.http.agent.pack_flow import Access, collection_not_found
from context_service.http.agent.pack_services import loaded_corpus, pack_services
from context_service.http.agent.pipeline import (
    AgentCaller,
    agent_services,
    authenticate,
)
from context_service.http.common import services, wait_for_views
from context_service.http.refusals import refusals
from context_service.projections.studied_fields.reads import Current, FieldReads, FieldSession

PATH = "/api/agent/v1/fields"
SCOPE = "context:read"
VIEWS = ("context_catalog", "context_sets", "studied_fields", "pack_inputs",
         "passage_features")
ERRORS = refusals({400: "INVALID_REQUEST or VALIDATION_ERROR (details: every violated field "
                        "rule, then the plan rules)",
                   401: "UNAUTHORIZED or EXPIRED_CREDENTIAL",
                   403: "AGENT_BROWSER_REQUEST_REFUSED, FORBIDDEN (scope) or "
                        "AGENT_CREDENTIAL_AUTHORITY_LOST",
                   404: 'NOT_FOUND: collection "<c>" not found',
                   429: "RATE_LIMITED (Retry-After)",
                   503: "SERVICE_UNAVAILABLE: the views could not catch up with the log in time"},
                  SHARED_ERRORS)


READABLE_VIEWS = ("context_catalog", "context_sets")  # what §3.4's readability is read from


def _reads(request: Request[Any, Any, Any]) -> FieldReads:
    return services(request).fields


def _readable(request: Request[Any, Any, Any], caller: AgentCaller, session: FieldSession,
              name: str) -> Current:
    """The collection now, or the 404 of §3.4 (absent and unreadable alike). Readability is
    judged first: a name no collection can have (one with a NUL) never reaches the table,
    whose text columns cannot hold it."""
    if name not in Access(request, caller).readable():
        raise collection_not_found(name)
    current = session.current(caller.workspace, name)
    if current is None or current.type not in COLLECTION_TYPES:
        raise collection_not_found(name)
    return current


def _texts(request: Request[Any, Any, Any], name: str,
           current: Current) -> dict[str, str] | None:
    if not current.publication:
        return None
    corpus = loaded_corpus(request, pack_services(request).configured(), [CollectionAt(
        name=name, live=True, type=current.type, current_revision="current",
        index_revision="current", publication=current.publication)])[name]
    return {p.record.id: p.record.text for p in corpus.passages}


def _at(request: Request[Any, Any, Any], caller: AgentCaller, session: FieldSession,
        name: str, current: Current, known: Any) -> tuple[FieldSource, Citations]:
    """The source answering at the position of ``knownAt`` (now without it)."""
    if known is None:
        if not current.publication:
            return MemorySource(name, ()), HeadCitations()
        return session.source(current), HeadCitations()
    ports = pack_services(request).configured()
    position, _ = ports.inputs.resolve(caller.workspace, pack_services(request).head(),
                                       shapes.known_at_end(known))
    at = ports.inputs.namespace_at(caller.workspace, position).collections.get(name)
    if name not in agent_services(request).admission.admitted_at(caller.workspace, position):
        at = None  # §3.4 rule 5 for the generation that lived then (a name taken again since)
    if at is None or not at.live or at.type not in COLLECTION_TYPES or not at.usable:
        return MemorySource(name, ()), LiveCitations(lambda: _texts(request, name, current))
    if at.publication == current.publication:
        return session.source(current), HeadCitations()
    corpus = loaded_corpus(request, ports, [at])[name]
    source = MemorySource(name, [p.record for p in corpus.passages])
    return source, LiveCitations(lambda: _texts(request, name, current))


def _check_plan(plan: Plan, source: FieldSource) -> None:
    v = Violations()
    for path, message in plan_violations(plan, {n: i.type for n, i in source.catalog().items()}):
        v.add(path, message)
    v.raise_if_any()


@post(PATH + "/list", status_code=200, opt={"body": ListFieldsRequest}, responses=ERRORS)
@body_after_pipeline
def list_fields(request: Request[Any, Any, Any], body: PendingBody) -> Response[FieldListing]:
    """The studied fields of a collection's current usable index, with their coverage."""
    caller = authenticate(request, SCOPE, VIEWS)
    name = shapes.check_list(decode(body, ListFieldsRequest))
    with _reads(request).session() as session:
        current = _readable(request, caller, session, name)
        source, _ = _at(request, caller, session, name, current, None)
        return api_json({"collectionId": name, **listing(source)})


@post(PATH + "/query", status_code=200, opt={"body": QueryFieldsRequest}, responses=ERRORS)
@body_after_pipeline
def query_fields(request: Request[Any, Any, Any], body: PendingBody) -> Response[FieldAnswer]:
    """Rows and aggregates of a plan over a collection's documents, every value cited live."""
    caller = authenticate(request, SCOPE, VIEWS)
    now = agent_services(request).clock()
    name, plan, known = shapes.check_query(decode(body, QueryFieldsRequest), now)
    with _reads(request).session() as session:
        current = _readable(request, caller, session, name)
        source, citations = _at(request, caller, session, name, current, known)
        _check_plan(plan, source)
        out: dict[str, Any] = {"collectionId": name}
        if known is not None:
            out["knownAt"] = known.isoformat()
        def readable_now() -> bool:  # a revocation while the plan ran is seen here
            wait_for_views(request, READABLE_VIEWS)
            return name in Access(request, caller).readable()

        out.update(answer(plan, source, ReadableCitations(citations, readable_now).cite))
        return api_json(out)


ROUTES = [list_fields, query_fields]
