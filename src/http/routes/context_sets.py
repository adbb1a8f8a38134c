"""Context sets of a workspace (agent-context-api.md §6.2): create, list, read, replace,
archive. These are ``/v1`` routes: ``{"error","message"}`` bodies, and a non-member or a member
lacking the route's permission is told ``workspace not found``.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.params import RawBody

from context_service.domain.context_set.commands import (
    ArchiveContextSet,
    CreateContextSet,
    ReplaceContextSet,
)
from context_service.domain.errors import ContextSetNotFoundError
from context_service.domain.events import Subject
from context_service.http.body import decode
from context_service.http.common import caller, json, no_content, services, threaded, wait_for_views
from context_service.http.context_set_shapes import ContextSetRequest, context_set, draft_of
from context_service.http.ports import ContextSetServices

PATH = "/v1/namespaces/{namespace:str}/context-sets"
VIEWS = ("context_sets",)
MANAGE = "context_set:manage"
READ = "context:read"


def _allowed(request: Request[Any, Any, Any], permission: str) -> tuple[str, Subject,
                                                                         ContextSetServices]:
    """Subject header, then the route's workspace permission (``404 workspace not found``)."""
    namespace = request.path_params["namespace"]
    actor = caller(request)
    found = services(request)
    assert found.agent is not None and found.context_sets is not None
    found.agent.workspaces.authorize(namespace, actor, permission)
    return namespace, actor, found.context_sets


@post(PATH, status_code=201, opt={"body": ContextSetRequest})
@threaded
def create_context_set(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """Create a context set (context_set:manage); its id stays taken once archived."""
    namespace, actor, sets = _allowed(request, MANAGE)
    req = decode(body, ContextSetRequest)
    command = CreateContextSet(actor=actor, set_id=req.id or "", draft=draft_of(req),
                               active_templates=sets.active_templates(
                                   namespace, req.query_templates or ()))
    outcome = sets.commands.execute(namespace, command)
    return json(context_set(outcome.state), 201, outcome.position)


@get(PATH)
@threaded
def list_context_sets(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Every context set of the namespace, active and archived, sorted by id (context:read)."""
    namespace, _, sets = _allowed(request, READ)
    wait_for_views(request, VIEWS)
    return json({"items": [context_set(s) for s in sets.reads.list(namespace)]})


@get(PATH + "/{id:str}")
@threaded
def get_context_set(request: Request[Any, Any, Any]) -> Response[bytes]:
    """One context set, active or archived (context:read)."""
    namespace, _, sets = _allowed(request, READ)
    wait_for_views(request, VIEWS)
    state = sets.reads.get(namespace, request.path_params["id"])
    if state is None:
        raise ContextSetNotFoundError()
    return json(context_set(state))


@put(PATH + "/{id:str}", opt={"body": ContextSetRequest})
@threaded
def replace_context_set(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """Replace the whole content with a new version; identical content records nothing."""
    namespace, actor, sets = _allowed(request, MANAGE)
    req = decode(body, ContextSetRequest)
    command = ReplaceContextSet(actor=actor, set_id=request.path_params["id"], body_id=req.id,
                                draft=draft_of(req),
                                active_templates=sets.active_templates(
                                   namespace, req.query_templates or ()))
    outcome = sets.commands.execute(namespace, command)
    return json(context_set(outcome.state), 200, outcome.position)


@delete(PATH + "/{id:str}", status_code=200, opt={"status": 204})
@threaded
def archive_context_set(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Archive a context set (final); archiving an archived set records nothing."""
    namespace, actor, sets = _allowed(request, MANAGE)
    outcome = sets.commands.execute(
        namespace, ArchiveContextSet(actor=actor, set_id=request.path_params["id"]))
    return no_content(outcome.position)


ROUTES = [create_context_set, list_context_sets, get_context_set, replace_context_set,
          archive_context_set]
