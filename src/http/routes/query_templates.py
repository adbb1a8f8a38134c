"""Query templates of a workspace (agent-context-api.md §11.1): register, list, read, replace,
retire. ``/v1`` routes: ``{"error","message"}`` bodies; every route needs
``query_template:manage`` (``404 workspace not found`` otherwise)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.params import RawBody

from context_service.domain.errors import QueryTemplateNotFoundError, SandboxNotConfiguredError
from context_service.domain.events import Subject
from context_service.domain.query_template.commands import (
    RegisterQueryTemplate,
    ReplaceQueryTemplate,
    RetireQueryTemplate,
)
from context_service.http.body import decode
from context_service.http.common import caller, json, no_content, services, threaded, wait_for_views
from context_service.http.ports import QueryTemplateServices
from context_service.http.query_template_shapes import (
    QueryTemplateRequest,
    draft_of,
    query_template,
)

PATH = "/v1/namespaces/{namespace:str}/query-templates"
VIEWS = ("query_templates",)
MANAGE = "query_template:manage"


def _allowed(request: Request[Any, Any, Any]) -> tuple[str, Subject, QueryTemplateServices]:
    namespace = request.path_params["namespace"]
    actor = caller(request)
    found = services(request)
    assert found.agent is not None and found.query_templates is not None
    found.agent.workspaces.authorize(namespace, actor, MANAGE)
    return namespace, actor, found.query_templates


def _configured(templates: QueryTemplateServices) -> None:
    if templates.sandbox.problem is not None:
        raise SandboxNotConfiguredError(templates.sandbox.problem)


@post(PATH, status_code=201, opt={"body": QueryTemplateRequest})
@threaded
def register_query_template(request: Request[Any, Any, Any],
                            body: RawBody) -> Response[bytes]:
    """Register a template after validation and the database check; its id stays taken."""
    namespace, actor, templates = _allowed(request)
    req = decode(body, QueryTemplateRequest, refuse_nul=True)
    _configured(templates)
    command = RegisterQueryTemplate(actor=actor, template_id=req.id or "", draft=draft_of(req),
                                    check=templates.sandbox.check)
    outcome = templates.commands.execute(namespace, command)
    return json(query_template(outcome.state), 201, outcome.position)


@get(PATH)
@threaded
def list_query_templates(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Every template of the namespace, both statuses, sorted by id, SQL included."""
    namespace, _, templates = _allowed(request)
    wait_for_views(request, VIEWS)
    return json({"items": [query_template(t) for t in templates.reads.list(namespace)]})


@get(PATH + "/{id:str}")
@threaded
def get_query_template(request: Request[Any, Any, Any]) -> Response[bytes]:
    """One template, active or retired."""
    namespace, _, templates = _allowed(request)
    wait_for_views(request, VIEWS)
    state = templates.reads.get(namespace, request.path_params["id"])
    if state is None:
        raise QueryTemplateNotFoundError()
    return json(query_template(state))


@put(PATH + "/{id:str}", opt={"body": QueryTemplateRequest})
@threaded
def replace_query_template(request: Request[Any, Any, Any],
                           body: RawBody) -> Response[bytes]:
    """Replace the whole content with a new version; identical content records nothing."""
    namespace, actor, templates = _allowed(request)
    req = decode(body, QueryTemplateRequest, refuse_nul=True)
    _configured(templates)
    command = ReplaceQueryTemplate(actor=actor, template_id=request.path_params["id"],
                                   body_id=req.id, draft=draft_of(req),
                                   check=templates.sandbox.check)
    outcome = templates.commands.execute(namespace, command)
    return json(query_template(outcome.state), 200, outcome.position)


@delete(PATH + "/{id:str}", status_code=200, opt={"status": 204})
@threaded
def retire_query_template(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Retire a template (final); retiring a retired one records nothing."""
    namespace, actor, templates = _allowed(request)
    outcome = templates.commands.execute(
        namespace, RetireQueryTemplate(actor=actor, template_id=request.path_params["id"]))
    return no_content(outcome.position)


ROUTES = [register_query_template, list_query_templates, get_query_template,
          replace_query_template, retire_query_template]
