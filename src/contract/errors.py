"""The two error bodies: ``/v1`` routes answer ``Error`` (a snake_case code and a message), the
``/api`` routes (agent API, workspace settings) ``ApiError`` (an upper-case code, a message,
and details for some codes). Every refusal a route documents carries its family's body unless
the route names a narrower one."""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, UnsetType

from context_service.contract.base import Closed, doc, one_of

ERROR_CODES = ("invalid_request", "unauthenticated", "not_found", "method_not_allowed",
               "already_exists", "in_use", "internal_error", "unsupported", "unavailable",
               "conflict")


class Error(Closed, kw_only=True):
    """A ``/v1`` error."""

    error: Annotated[str, one_of(*ERROR_CODES)]
    message: str


class ApiError(Closed, kw_only=True):
    """An ``/api`` error."""

    code: Annotated[str, doc(pattern="^[A-Z][A-Z_]*$")]
    message: str
    details: Annotated[Any, doc(oneOf=[
        {"type": "array", "items": {"type": "object", "properties": {
            "path": {"type": "string"}, "message": {"type": "string"}},
            "required": ["path", "message"], "additionalProperties": False}},
        {"type": "object"}])] | UnsetType = UNSET


def family(path: str) -> type[Error] | type[ApiError]:
    """The error body of a path's family."""
    return ApiError if path.startswith("/api/") else Error
