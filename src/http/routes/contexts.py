"""Named contexts: create, list, read, delete (spec 1.5)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post
from litestar.params import FromPath, JSONBody

from context_service.contract.contexts import (
    ContextList,
    ContextResource,
    CreateContextRequest,
    StorageRequest,
)
from context_service.domain.context.commands import CreateContext, DeleteContext
from context_service.domain.context.validation import validate_create
from context_service.domain.errors import ContextNotFoundError
from context_service.http import render
from context_service.http.common import (
    CATALOG,
    caller,
    in_thread,
    json,
    no_content,
    services,
    threaded,
    wait_for_views,
)
from context_service.http.refusals import refusals
from context_service.http.routes.timeline import as_of, list_as_of, visible_as_of
from context_service.http.sent import NOTHING, Sent, SentBody

BASE = "/v1/namespaces/{namespace:str}/contexts"


@post("/v1/contexts", dto=SentBody, responses=refusals({409: "the name is taken"}))
async def create_context(request: Request[Any, Any, Any],
                         data: JSONBody[Sent[CreateContextRequest]] = NOTHING,
                         ) -> Response[ContextResource]:
    """Create a named context; the caller becomes its owner."""
    actor = caller(request)
    req = data.decode(refuse_nul=True)
    storage = req.storage or StorageRequest()
    command = CreateContext(
        actor=actor, name=req.name or "", namespace=req.namespace or "", type=req.type or "",
        backend=storage.backend or "", size=storage.size or "",
        access_mode=storage.access_mode or "", storage_class=storage.storage_class or "")
    found = services(request)
    guard = found.name_guard
    if guard is not None:
        validate_create(command)
        await in_thread(guard, command.namespace, command.name)
    outcome = await found.contexts.execute_async(command.namespace, command.name, command)
    return json(render.context(outcome.state), 201, outcome.position)


@get(BASE, opt={"query": ("asOf", "asOfPosition")})
@threaded
def list_contexts(request: Request[Any, Any, Any],
                  namespace: FromPath[str]) -> Response[ContextList]:
    """List the contexts of a namespace the caller holds any permission on."""
    actor = caller(request)
    wait_for_views(request, CATALOG)
    point = as_of(request)
    if point is not None:
        return json({"items": [render.context(s, actor)
                               for s in list_as_of(request, namespace, point)]})
    found = services(request)
    subject = None if actor.key == "service:context-service-admin" else actor
    items = [render.context(s, actor) for s in found.reads.list(namespace, subject)]
    return json({"items": items})


@get(BASE + "/{name:str}", opt={"query": ("asOf", "asOfPosition"), "permission": "read"},
     responses=refusals({404: "no such context, or the caller may not read it"}))
@threaded
def get_context(request: Request[Any, Any, Any], namespace: FromPath[str],
                name: FromPath[str]) -> Response[ContextResource]:
    """Read a context (requires read)."""
    actor = caller(request)
    point = as_of(request)
    if point is not None:
        return json(render.context(visible_as_of(request, namespace, name, point, "read"), actor))
    wait_for_views(request, CATALOG)
    entry = services(request).reads.get(namespace, name)
    if entry is None or "read" not in entry.state.permissions_of(actor):
        raise ContextNotFoundError()
    return json(render.context(entry.state, actor))


@delete(BASE + "/{name:str}", status_code=204,
        opt={"query": ("force",), "permission": "administer"},
        responses=refusals({404: "no such context, or the caller may not administer it",
                            409: "consumers are attached (force=true detaches them)"}))
@threaded
def delete_context(request: Request[Any, Any, Any], namespace: FromPath[str],
                   name: FromPath[str]) -> Response[None]:
    """Delete a context (requires administer; consumers block unless force=true)."""
    actor = caller(request)
    force = request.query_params.get("force") == "true"
    outcome = services(request).contexts.execute(
        namespace, name, DeleteContext(actor=actor, force=force))
    return no_content(outcome.position)


ROUTES = [create_context, list_contexts, get_context, delete_context]
