"""Admission at ``/mcp``: steps 1-2 of the agent pipeline (browser refusal, the failure
throttle, the credential valid now) before the MCP transport reads a byte of the body, then the
protocol version the request names. Scope, live authority and the rate limit are each tool
call's, checked by its route."""

from __future__ import annotations

import json
from typing import Any

from litestar import Request
from litestar.types import Scope

from context_service.domain.agent_credentials.state import Credential
from context_service.domain.echoed import cut
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


def unsupported_version(scope: Scope, body: bytes) -> bytes | None:
    """The answer (a ``400``'s JSON-RPC error) to a request whose ``MCP-Protocol-Version`` this
    server does not speak, else None. The SDK hands every header it does not know to its
    per-request transport, whose first rung asks for the ``_meta`` envelope: a handshake client
    naming an unknown version was told its envelope was missing. Said here as the SDK says it of
    an unsupported envelope version (its code, ``supported`` and ``requested`` in ``data``),
    answering the request's id where the body is one request. Asked once the header is there;
    the SDK's version list is imported then."""
    requested = next((v.decode("latin-1") for k, v in scope["headers"]
                      if k == b"mcp-protocol-version"), None)
    if requested is None:
        return None
    from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
    from mcp_types.version import SUPPORTED_PROTOCOL_VERSIONS

    if requested in SUPPORTED_PROTOCOL_VERSIONS:
        return None
    supported = list(SUPPORTED_PROTOCOL_VERSIONS)
    return json.dumps({"jsonrpc": "2.0", "id": _request_id(body), "error": {
        "code": UNSUPPORTED_PROTOCOL_VERSION,
        "message": f"Unsupported protocol version: MCP-Protocol-Version {cut(requested)!r} is "
                   f"not supported; this server supports {', '.join(supported)}",
        "data": {"supported": supported, "requested": cut(requested)}}}).encode()


def _request_id(body: bytes) -> str | int | None:
    """The id of ``body`` where it is one request with an id MCP allows, else None."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    if isinstance(request_id, str) or (isinstance(request_id, int)
                                       and not isinstance(request_id, bool)):
        return request_id
    return None
