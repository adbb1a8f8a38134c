"""Query index publication and memory/knowledge query (spec 1.7, 5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from litestar import Request, Response, post, put
from litestar.params import FromPath, JSONBody

from context_service.contract.query import PublishQueryIndexRequest, QueryRequest, QueryResponse
from context_service.domain.context.decide import QUERYABLE_TYPES
from context_service.domain.context.state import ContextState
from context_service.domain.errors import ContextNotFoundError
from context_service.domain.events import ADMIN, Subject
from context_service.domain.query.cursor import encode_cursor
from context_service.domain.query.record import record_document
from context_service.domain.query.request import QueryInput, QueryPlan, beyond_result_set, plan
from context_service.http.common import (
    CATALOG,
    caller,
    json,
    no_content,
    services,
    threaded,
    wait_for_views,
)
from context_service.http.index_body import publish_command
from context_service.http.refusals import refusals
from context_service.http.sent import NOTHING, Sent, SentBody
from context_service.projections.query_index.reads import Hit, Search, SearchPage
from context_service.projections.reads import ContextReads

PATH = "/v1/namespaces/{namespace:str}/contexts/{name:str}"
QUERY_VIEWS = (*CATALOG, "query_index")
Json = dict[str, Any]


@put(PATH + "/query-index", status_code=204, dto=SentBody, opt={"permission": "write"},
     responses=refusals({404: "no such context, or the caller may not write it"}))
@threaded
def publish_query_index(request: Request[Any, Any, Any], namespace: FromPath[str],
                        name: FromPath[str],
                        data: JSONBody[Sent[PublishQueryIndexRequest]] = NOTHING,
                        ) -> Response[None]:
    """Publish the query records of the current revision (requires write, checked first)."""
    actor = caller(request)
    found = services(request)
    found.contexts.authorize(namespace, name, actor, "write")
    command = publish_command(actor, data.decode())
    outcome = found.contexts.execute(namespace, name, command)
    return no_content(outcome.position)


@post("/v1/namespaces/{namespace:str}/query", status_code=200, dto=SentBody,
      responses=refusals({404: "a named context is absent, or the caller may not read it"}))
@threaded
def query(request: Request[Any, Any, Any], namespace: FromPath[str],
          data: JSONBody[Sent[QueryRequest]] = NOTHING) -> Response[QueryResponse]:
    """Query the memory and knowledge contexts of a namespace the caller may read."""
    actor = caller(request)
    req = _input(data.decode())
    wait_for_views(request, QUERY_VIEWS)
    found = services(request)
    contexts = resolve(found.reads, namespace, actor, req.contexts)
    checked = plan(req)
    reads = found.query
    page = reads.search(_search(namespace, contexts, req, checked))
    if page.beyond:
        raise beyond_result_set()
    return json(_response(page, checked))


def resolve(reads: ContextReads, namespace: str, actor: Subject,
            names: Sequence[str]) -> tuple[str, ...]:
    """Spec 5.1 steps 1-3: the searchable contexts, by name; 404 for a named one not readable."""
    states: list[ContextState] = []
    if not names:
        states.extend(reads.list(namespace, None if actor == ADMIN else actor))
    for name in dict.fromkeys(names):
        entry = reads.get(namespace, name)
        if entry is None or "read" not in entry.state.permissions_of(actor):
            raise ContextNotFoundError()
        states.append(entry.state)
    return tuple(sorted(s.name for s in states if s.type in QUERYABLE_TYPES))


def _input(req: QueryRequest) -> QueryInput:
    return QueryInput(
        contexts=tuple(req.contexts or ()), types=tuple(req.types or ()),
        source_contexts=tuple(req.source_contexts or ()), revisions=tuple(req.revisions or ()),
        ids=tuple(req.ids or ()), query=req.query or "", limit=req.limit or 0,
        cursor=req.cursor or "")


def _search(namespace: str, contexts: tuple[str, ...], req: QueryInput,
            checked: QueryPlan) -> Search:
    return Search(namespace=namespace, contexts=contexts, terms=checked.terms, types=req.types,
                  source_contexts=req.source_contexts, revisions=req.revisions, ids=req.ids,
                  offset=checked.offset, limit=checked.limit)


def _response(page: SearchPage, checked: QueryPlan) -> Json:
    out: Json = {"items": [_hit(h) for h in page.hits]}
    if page.more:
        out["nextCursor"] = encode_cursor(checked.offset + checked.limit, checked.fingerprint)
    if page.unavailable:
        out["unavailable"] = list(page.unavailable)
    return out


def _hit(hit: Hit) -> Json:
    return {"score": hit.score, "record": record_document(hit.record)}


ROUTES = [publish_query_index, query]
