"""Agent credentials of a workspace (agent-context-api.md §4.2, §4.3): create (the token is
shown once), list, read, revoke. Callers are people behind the gateway (``X-Context-Subject``)
holding ``agent_credential:manage``."""

from __future__ import annotations

import secrets
from typing import Annotated, Any

import msgspec
from litestar import Request, Response, delete, get, post
from litestar.params import RawBody

from context_service.domain.agent_credentials.commands import CreateCredential, RevokeCredential
from context_service.domain.agent_credentials.decide import MAX_DAYS, MIN_DAYS
from context_service.domain.agent_credentials.token import format_token, secret_hash
from context_service.domain.errors import (
    CredentialIdTakenError,
    CredentialNotFoundError,
    PermissionRequiredError,
    RequestInvalidError,
    ScopeNotHeldError,
    WorkspaceNotFoundError,
)
from context_service.domain.events import ADMIN, Subject
from context_service.domain.workspace.roles import SCOPES, role_permits, subject_permits
from context_service.http.agent import render
from context_service.http.agent.body import ApiBody, Violations, check_range, check_text, decode
from context_service.http.agent.errors import ApiError, api_json, api_no_content
from context_service.http.agent.pipeline import agent_services
from context_service.http.common import services, threaded, wait_for_views
from context_service.http.errors import HttpError
from context_service.http.ports import AgentServices
from context_service.http.subject import request_subject

PATH = "/api/w/{wsId:str}/agent-credentials"
PERMISSION = "agent_credential:manage"
VIEWS = ("agent_credentials",)


# Constraints are documented in the OpenAPI schema and checked by the field rules (every
# violation reported in ``details`` with the spec's message), not by the decoder.
_Name = Annotated[str, msgspec.Meta(extra_json_schema={
    "minLength": 1, "maxLength": 100, "description": "required; not blank"})]
_Scopes = Annotated[list[Annotated[str, msgspec.Meta(extra_json_schema={"enum": list(SCOPES)})]],
                    msgspec.Meta(extra_json_schema={"minItems": 1, "uniqueItems": True,
                                                    "description": "required"})]
_Days = Annotated[int, msgspec.Meta(extra_json_schema={
    "minimum": MIN_DAYS, "maximum": MAX_DAYS, "description": "required"})]
_SetId = Annotated[str, msgspec.Meta(extra_json_schema={
    "minLength": 1, "description": "an active context set of the workspace"})]


class CreateCredentialRequest(ApiBody):
    name: _Name | None = None
    scopes: _Scopes | None = None
    expires_in_days: _Days | None = None
    context_set_id: _SetId | None = None


def api_caller(request: Request[Any, Any, Any]) -> Subject:
    """``X-Context-Subject`` with the ``/api/`` error body."""
    try:
        found = services(request)
        return request_subject(request.headers, found.require_subject, found.gateway_secret)
    except RequestInvalidError as exc:
        raise ApiError(400, "INVALID_REQUEST", exc.message) from exc
    except HttpError as exc:  # absent under CS_REQUIRE_SUBJECT, or without the gateway's proof
        raise ApiError(401, "UNAUTHORIZED", exc.message) from exc


def managing_role(agent: AgentServices, workspace: str, actor: Subject) -> str | None:
    """The caller's role when it holds ``agent_credential:manage`` (a refusal is confirmed on
    the log first): non-members are told the workspace does not exist, members lacking the
    permission are told so."""
    role = agent.workspaces.role_of(workspace, actor)
    if not subject_permits(actor, role, PERMISSION):
        role = agent.workspaces.role_of(workspace, actor, fresh=True)
    if actor == ADMIN:
        return role
    if role is None:
        raise WorkspaceNotFoundError()
    if not role_permits(role, PERMISSION):
        raise PermissionRequiredError(PERMISSION)
    return role


def _manager(request: Request[Any, Any, Any]) -> tuple[str, Subject, AgentServices, str | None]:
    """Steps 1-2 of every credential route: the caller, and its managing role in the workspace
    named by the path."""
    workspace = request.path_params["wsId"]
    actor = api_caller(request)
    agent = agent_services(request)
    return workspace, actor, agent, managing_role(agent, workspace, actor)


def _validate(req: CreateCredentialRequest) -> None:
    v = Violations()
    check_text(v, "$.name", req.name, 100)
    if req.scopes is None:
        v.add("$.scopes", "is required")
    elif not req.scopes:
        v.add("$.scopes", "must not be empty")
    else:
        for i, scope in enumerate(req.scopes):
            if scope not in SCOPES:
                v.add(f"$.scopes[{i}]", "must be context:read or queries:run")
            elif scope in req.scopes[:i]:
                v.add(f"$.scopes[{i}]", "is a duplicate")
    check_range(v, "$.expiresInDays", req.expires_in_days, MIN_DAYS, MAX_DAYS, required=True)
    if req.context_set_id is not None and req.context_set_id == "":
        v.add("$.contextSetId", "must not be empty")
    v.raise_if_any()


@post(PATH, status_code=201, opt={"body": CreateCredentialRequest})
@threaded
def create_credential(request: Request[Any, Any, Any], body: RawBody) -> Response[bytes]:
    """Create an agent credential; the answer carries its token, shown this once."""
    workspace, actor, agent, role = _manager(request)
    req = decode(body, CreateCredentialRequest)
    _validate(req)
    assert req.scopes is not None and req.name is not None and req.expires_in_days is not None
    for scope in req.scopes:
        if not subject_permits(actor, role, scope):
            raise ScopeNotHeldError(scope)
    set_id = req.context_set_id or ""
    if set_id and not agent.context_sets.active(workspace, set_id):
        rule = Violations()
        rule.add("$.contextSetId", "must name an active context set")
        rule.raise_if_any()
    scopes = tuple(s for s in SCOPES if s in req.scopes)
    while True:
        credential_id = secrets.token_hex(8)
        if agent.reads.credential(credential_id) is not None:
            continue  # ids are unique across all workspaces
        token = format_token(credential_id, secrets.token_bytes(32))
        command = CreateCredential(actor=actor, credential_id=credential_id, name=req.name,
                                   scopes=scopes, context_set_id=set_id,
                                   expires_in_days=req.expires_in_days,
                                   secret_hash=secret_hash(agent.key, token))
        try:
            outcome = agent.credentials.execute(workspace, command)
        except CredentialIdTakenError:
            continue
        break
    # the aggregate's fold knows no namespace; the credential's is the workspace
    created = msgspec.structs.replace(outcome.state.credentials[credential_id],
                                      namespace=workspace)
    return api_json(render.credential(created, agent.clock(), token), 201, outcome.position)


@get(PATH)
@threaded
def list_credentials(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Every credential of the workspace, of every status, newest first (no tokens)."""
    workspace, _, agent, _ = _manager(request)
    wait_for_views(request, VIEWS)
    now = agent.clock()
    return api_json({"items": [render.credential(c, now)
                               for c in agent.reads.credentials(workspace)]})


def _recorded(agent: AgentServices, workspace: str, credential_id: str) -> Any:
    credential = agent.reads.credential(credential_id)
    if credential is None or credential.namespace != workspace:
        raise CredentialNotFoundError()
    return credential


@get(PATH + "/{id:str}")
@threaded
def get_credential(request: Request[Any, Any, Any]) -> Response[bytes]:
    """One credential of the workspace (no token)."""
    workspace, _, agent, _ = _manager(request)
    wait_for_views(request, VIEWS)
    credential = _recorded(agent, workspace, request.path_params["id"])
    return api_json(render.credential(credential, agent.clock()))


@delete(PATH + "/{id:str}", status_code=200, opt={"status": 204})
@threaded
def revoke_credential(request: Request[Any, Any, Any]) -> Response[bytes]:
    """Revoke a credential; revoking a revoked one records nothing and answers 204 too."""
    workspace, actor, agent, _ = _manager(request)
    outcome = agent.credentials.execute(
        workspace, RevokeCredential(actor=actor, credential_id=request.path_params["id"]))
    return api_no_content(outcome.position)


ROUTES = [create_credential, list_credentials, get_credential, revoke_credential]
