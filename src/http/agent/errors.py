"""The ``/api/`` error table and body (agent-context-api.md §1.3): ``{"code","message"}`` plus
``details`` where the spec gives one; every ``/api/`` response carries ``Cache-Control:
no-store``. The ``/v1`` table (``http/errors.py``) is separate on purpose."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Request, Response

from context_service.domain import errors as e

PREFIX = "/api/"
NO_STORE = {"Cache-Control": "no-store"}
POSITION_HEADER = "X-Context-Position"

STATUS: dict[type[e.DomainError], tuple[int, str]] = {
    e.RequestInvalidError: (400, "INVALID_REQUEST"),
    e.EventTooLargeError: (400, "INVALID_REQUEST"),  # an event too large to publish
    e.WorkspaceNotFoundError: (404, "NOT_FOUND"),
    e.CredentialNotFoundError: (404, "NOT_FOUND"),
    e.ContextSetNotFoundError: (404, "NOT_FOUND"),
    e.PermissionRequiredError: (403, "FORBIDDEN"),
    e.ScopeNotHeldError: (403, "FORBIDDEN"),
    e.CredentialLimitError: (409, "AGENT_CREDENTIAL_LIMIT_REACHED"),
    e.ConcurrencyError: (500, "INTERNAL_ERROR"),
}

_enc = msgspec.json.Encoder()


class ApiError(Exception):
    """An ``/api/`` error answered as is."""

    def __init__(self, status: int, code: str, message: str, details: Any = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or {}


class Violation(msgspec.Struct, frozen=True):
    path: str
    message: str


def is_api(request: Request[Any, Any, Any]) -> bool:
    return str(request.scope.get("path", "")).startswith(PREFIX)


def api_response(status: int, code: str, message: str, details: Any = None,
                 headers: dict[str, str] | None = None) -> Response[Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        body["details"] = details
    return Response(_enc.encode(body), status_code=status, media_type="application/json",
                    headers={**(headers or {}), **NO_STORE})


def api_json(body: Any, status: int = 200, position: int = 0) -> Response[Any]:
    headers = dict(NO_STORE)
    if position:
        headers[POSITION_HEADER] = str(position)
    return Response(_enc.encode(body), status_code=status, media_type="application/json",
                    headers=headers)


def api_no_content(position: int = 0) -> Response[Any]:
    headers = dict(NO_STORE)
    if position:
        headers[POSITION_HEADER] = str(position)
    return Response(b"", status_code=204, headers=headers)


def api_error(exc: ApiError) -> Response[Any]:
    return api_response(exc.status, exc.code, exc.message, exc.details, exc.headers)


def domain_response(exc: e.DomainError) -> Response[bytes]:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            status, code = STATUS[cls]  # type: ignore[index]
            details = {"limit": exc.limit} if isinstance(exc, e.CredentialLimitError) else None
            return api_response(status, code, exc.message, details)
    return api_response(500, "INTERNAL_ERROR", exc.message)


# Conditions every /api/ route shares.
def not_found_route() -> Response[bytes]:
    return api_response(404, "NOT_FOUND", "route not found")


def method_not_allowed(allow: dict[str, str] | None) -> Response[bytes]:
    return api_response(405, "METHOD_NOT_ALLOWED", "method not allowed", headers=allow)


def unavailable() -> ApiError:
    return ApiError(503, "SERVICE_UNAVAILABLE",
                    "the service could not catch up with the log in time", None,
                    {"Retry-After": "1"})
