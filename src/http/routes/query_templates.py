"""Query templates of a workspace (agent-context-api.md §11.1): register, list, read, replace,
retire. ``/v1`` routes: ``{"error","message"}`` bodies; every route needs
``query_template:manage`` (``404 workspace not found`` otherwise)."""

from __future__ import annotations

from typing import Any

from litestar import Request, Response, delete, get, post, put
from litestar.params import FromPath, JSONBody

from context_service.contract.query_templates import (
    QueryTemplate,
    QueryTemplateList,
    QueryTemplateRequest,
    ReplaceQueryTemplateRequest,
)
from context_service.domain.errors import QueryTemplateNotFoundError, SandboxNotConfiguredError
from context_service.domain.events import Subject
from context_service.domain.query_template.commands import (
    RegisterQueryTemplate,
    ReplaceQueryTemplate,
    RetireQueryTemplate,
)
from context_service.http.common import caller, json, no_content, services, threaded, wait_for_views
from context_service.http.ports import QueryTemplateServices
from context_service.http.query_template_shapes import draft_of, query_template
from context_service.http.refusals import refusals
from context_service.http.sent import NOTHING, Sent, SentBody

PATH = "/v1/namespaces/{namespace:str}/query-templates"
VIEWS = ("query_templates",)
MANAGE = "query_template:manage"
OPT = {"permission": MANAGE}
NO_WORKSPACE = "no such workspace, or the caller may not manage its query templates"
NOT_FOUND = {404: NO_WORKSPACE + "; or no such query template"}
INVALID = "the body breaks a rule, or the database refuses the statement"
SANDBOX = "the query template sandbox is not configured"


def _allowed(request: Request[Any, Any, Any],
             namespace: str) -> tuple[Subject, QueryTemplateServices]:
    actor = caller(request)
    found = services(request)
    assert found.agent is not None and found.query_templates is not None
    # on the log now: template commands do not check the membership again, and a manager
    # another replica removed a moment ago must not register or retire templates here
    found.agent.workspaces.authorize(namespace, actor, MANAGE, fresh=True)
    return actor, found.query_templates


def _configured(templates: QueryTemplateServices) -> None:
    if templates.sandbox.problem is not None:
        raise SandboxNotConfiguredError(templates.sandbox.problem)


@post(PATH, status_code=201, opt=OPT, dto=SentBody,
      responses=refusals({400: INVALID, 404: NO_WORKSPACE,
                          409: "the id is taken (retired templates included)", 500: SANDBOX}))
@threaded
def register_query_template(request: Request[Any, Any, Any], namespace: FromPath[str],
                            data: JSONBody[Sent[QueryTemplateRequest]] = NOTHING,
                            ) -> Response[QueryTemplate]:
    """Register a template after validation and the database check; its id stays taken."""
    actor, templates = _allowed(request, namespace)
    req = data.decode(refuse_nul=True)
    _configured(templates)
    command = RegisterQueryTemplate(actor=actor, template_id=req.id or "", draft=draft_of(req),
                                    check=templates.sandbox.check)
    outcome = templates.commands.execute(namespace, command)
    return json(query_template(outcome.state), 201, outcome.position)


@get(PATH, opt=OPT, responses=refusals({404: NO_WORKSPACE}))
@threaded
def list_query_templates(request: Request[Any, Any, Any],
                         namespace: FromPath[str]) -> Response[QueryTemplateList]:
    """Every template of the namespace, both statuses, sorted by id, SQL included."""
    _, templates = _allowed(request, namespace)
    wait_for_views(request, VIEWS)
    return json({"items": [query_template(t) for t in templates.reads.list(namespace)]})


@get(PATH + "/{id:str}", opt=OPT, responses=refusals(NOT_FOUND))
@threaded
def get_query_template(request: Request[Any, Any, Any], namespace: FromPath[str],
                       id: FromPath[str]) -> Response[QueryTemplate]:
    """One template, active or retired."""
    _, templates = _allowed(request, namespace)
    wait_for_views(request, VIEWS)
    state = templates.reads.get(namespace, id)
    if state is None:
        raise QueryTemplateNotFoundError()
    return json(query_template(state))


@put(PATH + "/{id:str}", opt=OPT, dto=SentBody,
     responses=refusals({400: INVALID + "; or its id is not the path's", **NOT_FOUND,
                         409: "the template is retired", 500: SANDBOX}))
@threaded
def replace_query_template(request: Request[Any, Any, Any], namespace: FromPath[str],
                           id: FromPath[str],
                           data: JSONBody[Sent[ReplaceQueryTemplateRequest]] = NOTHING,
                           ) -> Response[QueryTemplate]:
    """Replace the whole content with a new version; identical content records nothing."""
    actor, templates = _allowed(request, namespace)
    req = data.decode(refuse_nul=True)
    _configured(templates)
    command = ReplaceQueryTemplate(actor=actor, template_id=id,
                                   body_id=req.id, draft=draft_of(req),
                                   check=templates.sandbox.check)
    outcome = templates.commands.execute(namespace, command)
    return json(query_template(outcome.state), 200, outcome.position)


@delete(PATH + "/{id:str}", status_code=204, opt=OPT, responses=refusals(NOT_FOUND))
@threaded
def retire_query_template(request: Request[Any, Any, Any], namespace: FromPath[str],
                          id: FromPath[str]) -> Response[None]:
    """Retire a template (final); retiring a retired one records nothing."""
    actor, templates = _allowed(request, namespace)
    outcome = templates.commands.execute(
        namespace, RetireQueryTemplate(actor=actor, template_id=id))
    return no_content(outcome.position)


ROUTES = [register_query_template, list_query_templates, get_query_template,
          replace_query_template, retire_query_template]
