"""Agent credentials of a workspace (agent-context-api.md §4.2, §4.3): create (the token is
shown once), list, read, revoke. Callers are people behind the gateway (``X-Context-Subject``)
holding ``agent_credential:manage``."""

from __future__ import annotations

import secrets
from typing import Any

import msgspec
from litestar import Request, Response, delete, get, post
from litestar.params import FromPath, JSONBody

from context_service.contract.workspaces import (
    CreateCredentialRequest,
    CreatedCredential,
    Credential,
    CredentialList,
)
from context_service.domain.agent_credentials.commands import CreateCredential, RevokeCredential
from context_service.domain.agent_credentials.decide import MAX_DAYS, MIN_DAYS
from context_service.domain.agent_credentials.token import (
    format_token,
    is_credential_id,
    secret_hash,
)
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
from context_service.http.agent.body import Violations, check_range, check_text, decode
from context_service.http.agent.errors import ApiError, api_json, api_no_content
from context_service.http.agent.pipeline import agent_services
from context_service.http.common import services, threaded, wait_for_views
from context_service.http.errors import HttpError
from context_service.http.ports import AgentServices
from context_service.http.refusals import refusals
from context_service.http.sent import NOTHING, Sent, SentBody
from context_service.http.subject import request_subject

PATH = "/api/w/{wsId:str}/agent-credentials"
PERMISSION = "agent_credential:manage"
VIEWS = ("agent_credentials",)


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
    """The caller's role when it holds ``agent_credential:manage``, read from the log now (a
    membership another replica changed a moment ago counts; credential commands do not check
    it again): non-members are told the workspace does not exist, members lacking the
    permission are told so."""
    role = agent.workspaces.role_of(workspace, actor, fresh=True)
    if actor == ADMIN:
        return role
    if role is None:
        raise WorkspaceNotFoundError()
    if not role_permits(role, PERMISSION):
        raise PermissionRequiredError(PERMISSION)
    return role


def _manager(request: Request[Any, Any, Any],
             workspace: str) -> tuple[Subject, AgentServices, str | None]:
    """Steps 1-2 of every credential route: the caller, and its managing role in the workspace
    named by the path."""
    actor = api_caller(request)
    agent = agent_services(request)
    return actor, agent, managing_role(agent, workspace, actor)


def _validate(req: CreateCredentialRequest) -> None:
    v = Violations()
    check_text(v, "$.name", req.name, 100)
    if req.scopes is None:
        v.add("$.scopes", "is required")
    elif not req.scopes:
        v.add("$.scopes", "must not be empty")
    else:
        seen: set[str] = set()  # not the earlier entries again: a body may repeat one 69,000 times
        for i, scope in enumerate(req.scopes):
            if scope not in SCOPES:
                v.add(f"$.scopes[{i}]", "must be context:read or queries:run")
            elif scope in seen:
                v.add(f"$.scopes[{i}]", "is a duplicate")
            seen.add(scope)
    check_range(v, "$.expiresInDays", req.expires_in_days, MIN_DAYS, MAX_DAYS, required=True)
    if req.context_set_id is not None and req.context_set_id == "":
        v.add("$.contextSetId", "must not be empty")
    v.raise_if_any()


HIDDEN = "no such workspace, or the caller is not a member"
LACKS = "the caller's role lacks agent_credential:manage"


@post(PATH, status_code=201, dto=SentBody, opt={"permission": PERMISSION},
      responses=refusals({403: LACKS + ", or a scope it asks for",
                          404: HIDDEN,
                          409: "the workspace holds the most active credentials it may"}))
@threaded
def create_credential(request: Request[Any, Any, Any], wsId: FromPath[str],
                      data: JSONBody[Sent[CreateCredentialRequest]] = NOTHING,
                      ) -> Response[CreatedCredential]:
    """Create an agent credential; the answer carries its token, shown this once."""
    workspace = wsId
    actor, agent, role = _manager(request, workspace)
    req = decode(data.raw, CreateCredentialRequest)
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


@get(PATH, opt={"permission": PERMISSION}, responses=refusals({403: LACKS, 404: HIDDEN}))
@threaded
def list_credentials(request: Request[Any, Any, Any],
                     wsId: FromPath[str]) -> Response[CredentialList]:
    """Every credential of the workspace, of every status, newest first (no tokens)."""
    workspace = wsId
    _, agent, _ = _manager(request, workspace)
    wait_for_views(request, VIEWS)
    now = agent.clock()
    return api_json({"items": [render.credential(c, now)
                               for c in agent.reads.credentials(workspace)]})


def _recorded(agent: AgentServices, workspace: str, credential_id: str) -> Any:
    # a segment of another shape names no credential (nor reaches the view: NUL is no text)
    credential = agent.reads.credential(credential_id) if is_credential_id(credential_id) \
        else None
    if credential is None or credential.namespace != workspace:
        raise CredentialNotFoundError()
    return credential


@get(PATH + "/{id:str}", opt={"permission": PERMISSION},
     responses=refusals({403: LACKS, 404: HIDDEN + ", or no such credential in it"}))
@threaded
def get_credential(request: Request[Any, Any, Any], wsId: FromPath[str],
                   id: FromPath[str]) -> Response[Credential]:
    """One credential of the workspace (no token)."""
    workspace = wsId
    _, agent, _ = _manager(request, workspace)
    wait_for_views(request, VIEWS)
    credential = _recorded(agent, workspace, id)
    return api_json(render.credential(credential, agent.clock()))


@delete(PATH + "/{id:str}", status_code=204, opt={"permission": PERMISSION},
        responses=refusals({403: LACKS, 404: HIDDEN + ", or no such credential in it"}))
@threaded
def revoke_credential(request: Request[Any, Any, Any], wsId: FromPath[str],
                      id: FromPath[str]) -> Response[None]:
    """Revoke a credential; revoking a revoked one records nothing and answers 204 too."""
    workspace = wsId
    actor, agent, _ = _manager(request, workspace)
    outcome = agent.credentials.execute(
        workspace, RevokeCredential(actor=actor, credential_id=id))
    return api_no_content(outcome.position)


ROUTES = [create_credential, list_credentials, get_credential, revoke_credential]
