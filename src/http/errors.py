"""The one table mapping domain errors to HTTP status and ``{"error", "message"}``."""

from __future__ import annotations

from typing import Any

import msgspec
from litestar import Response

from context_service.domain import errors as e

STATUS: dict[type[e.DomainError], tuple[int, str]] = {
    e.RequestInvalidError: (400, "invalid_request"),
    e.EventTooLargeError: (400, "invalid_request"),  # an event too large to publish
    e.ContextInvalidError: (400, "invalid_request"),
    e.PoolInvalidError: (400, "invalid_request"),
    e.PoolReferenceInvalidError: (400, "invalid_request"),
    e.ContextNotFoundError: (404, "not_found"),
    e.PoolNotFoundError: (404, "not_found"),
    e.ContextExistsError: (409, "already_exists"),
    e.PoolExistsError: (409, "already_exists"),
    e.ContextInUseError: (409, "in_use"),
    e.LifecycleUnsupportedError: (501, "unsupported"),
    e.ConcurrencyError: (500, "internal_error"),
    # workspace routes (agent-context-api.md §3)
    e.WorkspaceNotFoundError: (404, "not_found"),
    e.MemberNotFoundError: (404, "not_found"),
    e.MembershipInvalidError: (400, "invalid_request"),
    e.MembershipConflictError: (409, "conflict"),
    # context-set routes (agent-context-api.md §6)
    e.ContextSetInvalidError: (400, "invalid_request"),
    e.ContextSetReferenceInvalidError: (400, "invalid_request"),
    e.ContextSetNotFoundError: (404, "not_found"),
    e.ContextSetExistsError: (409, "already_exists"),
    e.ContextSetArchivedError: (409, "conflict"),
    # query-template routes (agent-context-api.md §11)
    e.QueryTemplateInvalidError: (400, "invalid_request"),
    e.QueryTemplateRefusedError: (400, "invalid_request"),
    e.QueryTemplateNotFoundError: (404, "not_found"),
    e.QueryTemplateExistsError: (409, "already_exists"),
    e.QueryTemplateRetiredError: (409, "conflict"),
    e.SandboxNotConfiguredError: (500, "internal_error"),
}

_enc = msgspec.json.Encoder()


class HttpError(Exception):
    """An error answered as is (for conditions that are not domain decisions)."""

    def __init__(self, status: int, code: str, message: str,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}


def error_response(status: int, code: str, message: str,
                   headers: dict[str, str] | None = None) -> Response[Any]:
    body = _enc.encode({"error": code, "message": message})
    return Response(body, status_code=status, media_type="application/json", headers=headers)


def domain_error_response(exc: e.DomainError) -> Response[bytes]:
    for cls in type(exc).__mro__:
        if cls in STATUS:
            status, code = STATUS[cls]  # type: ignore[index]
            return error_response(status, code, exc.message)
    return error_response(500, "internal_error", exc.message)
