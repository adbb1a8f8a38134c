"""The bearer pipeline every ``/api/agent/v1`` route calls first (agent-context-api.md §1.5,
§4.5): browser refusal, the failed-authentication throttle of the client address, credential,
scope, the creator's live authority, the rate limit. The route then reads its body.

Credentials and roles come from the in-process access directory after the read-your-writes wait,
so a credential revoked (or a member removed) before this request began is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from litestar import Request

from context_service.domain.agent_credentials.state import Credential
from context_service.domain.agent_credentials.token import bearer_token, token_id, verify
from context_service.domain.events import ADMIN, Subject
from context_service.domain.values import quote
from context_service.domain.workspace.roles import role_permits
from context_service.http.agent.errors import ApiError
from context_service.http.agent.ratelimit import AuthFailures
from context_service.http.common import from_browser, services, wait_for_views
from context_service.http.ports import AgentServices

ACCESS_VIEWS = ("agent_credentials", "workspace_members")
BROWSER_REFUSED = ApiError(
    403, "AGENT_BROWSER_REQUEST_REFUSED",
    "browser requests are refused; call the agent API from a server-side client")


@dataclass(frozen=True, slots=True)
class AgentCaller:
    """The credential of a request that passed the pipeline, acting as its creator."""

    credential: Credential
    creator: Subject

    @property
    def workspace(self) -> str:
        return self.credential.namespace

    @property
    def context_set_id(self) -> str:
        return self.credential.context_set_id


def agent_services(request: Request[Any, Any, Any]) -> AgentServices:
    found = services(request).agent
    assert found is not None, "the agent API is not configured"
    return found


def refuse_browser(scope_headers: Iterable[tuple[bytes, bytes]]) -> None:
    if from_browser(scope_headers):
        raise BROWSER_REFUSED


def _unauthorized(message: str) -> ApiError:
    return ApiError(401, "UNAUTHORIZED", message)


def presented_token(request: Request[Any, Any, Any]) -> str:
    values = request.headers.getall("authorization", [])
    if not values:
        raise _unauthorized("agent credential is required")
    token = bearer_token(values[0]) if len(values) == 1 else None
    if token is None:
        raise _unauthorized("agent credential is malformed")
    return token


def client_address(scope: Any) -> str:
    """The peer of the connection (the ASGI ``client``). Behind a proxy it is the proxy's: the
    throttle then counts the proxy's failures, which no header can dodge (docs/deploy.md)."""
    client = scope.get("client")
    return str(client[0]) if client else ""


def failure_throttle(request: Request[Any, Any, Any]) -> AuthFailures | None:
    return services(request).auth_failures


def authenticate(request: Request[Any, Any, Any], scope: str,
                 views: Sequence[str] = (), head: int | None = None) -> AgentCaller:
    """Steps 1-5 of §1.5, in order; blocking (it waits for the views ``views`` and the access
    views to reach the log head as of now, or ``head`` when the caller has just read it).

    Between steps 1 and 2, an address that failed step 2 too often is refused (429) before its
    credential is looked at; every failure of step 2 counts against the address."""
    credential = identify(request, views, head)
    if scope not in credential.scopes:
        raise ApiError(403, "FORBIDDEN", f"agent credential lacks scope {quote(scope)}")
    creator = _creator(credential)
    agent = agent_services(request)
    _check_authority(agent, credential, creator, scope)
    wait = agent.limiter.take(credential.id)
    if wait:
        raise ApiError(429, "RATE_LIMITED", f"rate limit exceeded; retry after {wait} seconds",
                       None, {"Retry-After": str(wait)})
    return AgentCaller(credential, creator)


def identify(request: Request[Any, Any, Any], views: Sequence[str] = (),
             head: int | None = None) -> Credential:
    """Steps 1-2 of §1.5 with the failed-authentication throttle between them: the credential
    presenting the request, valid now, before any scope is asked for (``authenticate`` goes on
    from here; the MCP endpoint admits a connection with it). Blocking, as ``authenticate``."""
    refuse_browser(request.scope["headers"])
    throttle = failure_throttle(request)
    address = client_address(request.scope)
    if throttle is not None and (wait := throttle.refusal(address)):
        raise ApiError(429, "RATE_LIMITED", "too many failed authentications; retry after "
                       f"{wait} seconds", None, {"Retry-After": str(wait)})
    agent = agent_services(request)
    try:
        credential = _credential(request, agent, views, head)
    except ApiError as exc:
        if throttle is not None and exc.status == 401:
            throttle.failed(address)
        raise
    return credential


def _credential(request: Request[Any, Any, Any], agent: AgentServices, views: Sequence[str],
                head: int | None) -> Credential:
    """Step 2: the presented credential, valid now. An unknown id costs what a known one with
    a wrong secret costs: the directory answers both from memory, and both are hashed."""
    token = presented_token(request)
    wait_for_views(request, (*ACCESS_VIEWS, *views), head)  # answered in the /api/ body
    return _valid(agent, token)


def _valid(agent: AgentServices, token: str) -> Credential:
    """The recorded credential of a well-formed token, valid now (as the directory has it)."""
    credential_id = token_id(token)
    assert credential_id is not None
    credential = agent.directory.credential(credential_id)
    recorded = credential.secret_hash if credential is not None else None
    if not verify(agent.key, token, recorded) or credential is None:
        raise _unauthorized("agent credential is not valid")
    if credential.revoked_at is not None:
        raise _unauthorized("agent credential is not valid")
    if agent.clock() >= credential.expires_at:
        raise ApiError(401, "EXPIRED_CREDENTIAL", "agent credential has expired")
    return credential


def presents_credential(request: Request[Any, Any, Any]) -> bool:
    """Whether the request, not from a browser, presents a credential valid now as the access
    directory has it: no wait for the views and nothing counted against the address (the
    route's own pipeline decides; this only tells whether its body is worth receiving before a
    request thread takes the request). Blocking (the directory may read the database)."""
    agent = services(request).agent
    if agent is None or from_browser(request.scope["headers"]):
        return False
    try:
        _valid(agent, presented_token(request))
    except Exception:  # refused, or the directory unreadable: the pipeline answers it
        return False
    return True


def _creator(credential: Credential) -> Subject:
    kind, _, name = credential.created_by.partition(":")
    return Subject(kind, name)


def _check_authority(agent: AgentServices, credential: Credential, creator: Subject,
                     permission: str) -> None:
    if creator == ADMIN:
        return
    workspace = credential.namespace
    role = agent.directory.role(workspace, creator)
    if role is None:
        raise ApiError(403, "AGENT_CREDENTIAL_AUTHORITY_LOST",
                       "the credential's creator is no longer a member of workspace "
                       + quote(workspace))
    if not role_permits(role, permission):
        raise ApiError(403, "AGENT_CREDENTIAL_AUTHORITY_LOST",
                       f"the credential's creator no longer holds {quote(permission)} in "
                       f"workspace {quote(workspace)}")


def recheck(request: Request[Any, Any, Any], caller: AgentCaller, scope: str) -> None:
    """Steps 2-4 of §1.5 again, against the access directory now (the release check of a pack,
    §7.9): a credential revoked or expired, or a creator who lost the permission meanwhile, gets
    the same answer as at the start."""
    agent = agent_services(request)
    credential = agent.directory.credential(caller.credential.id)
    if credential is None or credential.revoked_at is not None:
        raise _unauthorized("agent credential is not valid")
    if agent.clock() >= credential.expires_at:
        raise ApiError(401, "EXPIRED_CREDENTIAL", "agent credential has expired")
    _check_authority(agent, credential, caller.creator, scope)
