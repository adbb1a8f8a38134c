"""Admission at ``/mcp``: steps 1-2 of the agent pipeline (browser refusal, the failure
throttle, the credential valid now) before the MCP transport reads a byte of the body. Scope,
live authority and the rate limit are each tool call's, checked by its route."""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.types import Scope

from context_service.domain.agent_credentials.state import Credential
from context_service.http.agent import errors as api
from context_service.http.agent.pipeline import identify
from context_service.http.common import in_thread
from context_service.http.errors import HttpError

METADATA_PATH = "/.well-known/oauth-protected-resource/mcp"
CREDENTIAL = "context_service.mcp.credential"  # the admitted credential, in the ASGI scope


def base_url(scope: Scope) -> str:
    """The address the client used (its Host header), so metadata names the resource it sees."""
    host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
    if not host:
        server = scope.get("server") or ("localhost", 80)
        host = f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


def challenge(scope: Scope, error: api.ApiError) -> dict[str, str]:
    """``WWW-Authenticate`` of a refused credential (RFC 6750, RFC 9728 ``resource_metadata``)."""
    presented = any(k == b"authorization" for k, _ in scope["headers"])
    value = f'Bearer resource_metadata="{base_url(scope)}{METADATA_PATH}"'
    if presented:
        value += f', error="invalid_token", error_description="{error.message}"'
    return {"WWW-Authenticate": value}


async def admit(request: Request[Any, Any, Any]) -> Credential:
    """The credential of an ``/mcp`` request; raises the pipeline's ``ApiError`` (a 401 with its
    challenge) otherwise."""
    try:
        return await in_thread(identify, request)
    except HttpError as exc:  # the access views did not catch up in time
        if exc.status == 503:
            raise api.unavailable() from exc
        raise
    except api.ApiError as exc:
        if exc.status == 401:
            exc.headers = {**exc.headers, **challenge(request.scope, exc)}
        raise
