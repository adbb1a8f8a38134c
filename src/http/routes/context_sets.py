"""Context sets of a workspace (agent-context-api.md §6.2): create, list, read, replace,
archive. These are ``/v1`` routes: ``{"error","message"}`` bodies, and a non-member or a member
lacking the route's permission is told ``workspace not found``.
"""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath, JSONBody

from context_service.contract.workspaces import (
    ContextSet,
    ContextSetItems,
    CreateContextSetRequest,
    ReplaceContextSetRequest,
)
from context_service.domain.context_set.commands import (
    ArchiveContextSet,
    CreateContextSet,
    ReplaceContextSet,
)
from context_service.domain.context_set.validation import MAX_TEMPLATES
from context_service.domain.errors import ContextSetNotFoundError
from context_service.domain.events import Subject
from context_service.http.common import caller, json, no_content, services, threaded, wait_for_views
from context_service.http.context_set_shapes import context_set, draft_of
from context_service.http.ports import ContextSetServices
from context_service.http.refusals import refusals
from context_service.http.sent import NOTHING, Sent, SentBody

PATH = "/v1/namespaces/{namespace:str}/context-sets"
VIEWS = ("context_sets",)
MANAGE = "context_set:manage"
READ = "context:read"
HIDDEN = "no such workspace, or the caller lacks the route's permission"


def _allowed(request: Request[Any, Any, Any], namespace: str,
             permission: str) -> tuple[Subject, ContextSetServices]:
    """Subject header, then the route's workspace permission (``404 workspace not found``),
    read from the log now: set commands do not check the membership again."""
    actor = caller(request)
    found = services(request)
    assert found.agent is not None and found.context_sets is not None
    found.agent.workspaces.authorize(namespace, actor, permission, fresh=True)
    return actor, found.context_sets


def _active_templates(sets: ContextSetServices, namespace: str,
                      req: CreateContextSetRequest) -> frozenset[str]:
    """Which of the body's query templates are active, for the domain check. A list that
    validation refuses anyway (more than the limit, or repeated names) is not looked up: each
    name costs a read of the log, and a body may name hundreds of thousands."""
    named = req.query_templates or []
    if len(named) > MAX_TEMPLATES or len(set(named)) != len(named):
        return frozenset()
    return sets.active_templates(namespace, named)


@post(PATH, status_code=201, dto=SentBody, opt={"permission": MANAGE},
      responses=refusals({404: HIDDEN, 409: "the id is taken (archived sets keep theirs)"}))
@threaded
def create_context_set(request: Request[Any, Any, Any], namespace: FromPath[str],
                       data: JSONBody[Sent[CreateContextSetRequest]] = NOTHING,
                       ) -> Response[ContextSet]:
    """Create a context set (context_set:manage); its id stays taken once archived."""
    actor, sets = _allowed(request, namespace, MANAGE)
    req = data.decode()
    command = CreateContextSet(actor=actor, set_id=req.id or "", draft=draft_of(req),
                               active_templates=_active_templates(sets, namespace, req))
    outcome = sets.commands.execute(namespace, command)
    return json(context_set(outcome.state), 201, outcome.position)


@get(PATH, opt={"permission": READ}, responses=refusals({404: HIDDEN}))
@threaded
def list_context_sets(request: Request[Any, Any, Any],
                      namespace: FromPath[str]) -> Response[ContextSetItems]:
    """Every context set of the namespace, active and archived, sorted by id (context:read)."""
    _, sets = _allowed(request, namespace, READ)
    wait_for_views(request, VIEWS)
    return json({"items": [context_set(s) for s in sets.reads.list(namespace)]})


@get(PATH + "/{id:str}", opt={"permission": READ},
     responses=refusals({404: "no such workspace or context set, or the caller lacks "
                              "context:read"}))
@threaded
def get_context_set(request: Request[Any, Any, Any], namespace: FromPath[str],
                    id: FromPath[str]) -> Response[ContextSet]:
    """One context set, active or archived (context:read)."""
    _, sets = _allowed(request, namespace, READ)
    wait_for_views(request, VIEWS)
    state = sets.reads.get(namespace, id)
    if state is None:
        raise ContextSetNotFoundError()
    return json(context_set(state))


@put(PATH + "/{id:str}", dto=SentBody, opt={"permission": MANAGE},
     responses=refusals({404: "no such workspace or context set, or the caller lacks "
                              "context_set:manage",
                         409: "the set is archived"}))
@threaded
def replace_context_set(request: Request[Any, Any, Any], namespace: FromPath[str],
                        id: FromPath[str],
                        data: JSONBody[Sent[ReplaceContextSetRequest]] = NOTHING,
                        ) -> Response[ContextSet]:
    """Replace the whole content with a new version; identical content records nothing."""
    actor, sets = _allowed(request, namespace, MANAGE)
    req = data.decode()
    command = ReplaceContextSet(actor=actor, set_id=id, body_id=req.id,
                                draft=draft_of(req),
                                active_templates=_active_templates(sets, namespace, req))
    outcome = sets.commands.execute(namespace, command)
    return json(context_set(outcome.state), 200, outcome.position)


@delete(PATH + "/{id:str}", status_code=204, opt={"permission": MANAGE},
        responses=refusals({404: "no such workspace or context set, or the caller lacks "
                                 "context_set:manage"}))
@threaded
def archive_context_set(request: Request[Any, Any, Any], namespace: FromPath[str],
                        id: FromPath[str]) -> Response[None]:
    """Archive a context set (final); archiving an archived set records nothing."""
    actor, sets = _allowed(request, namespace, MANAGE)
    outcome = sets.commands.execute(namespace, ArchiveContextSet(actor=actor, set_id=id))
    return no_content(outcome.position)


ROUTES = [create_context_set, list_context_sets, get_context_set, replace_context_set,
          archive_context_set]
