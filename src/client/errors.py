"""The agent API's errors as exceptions: each carries the answer's status, ``code``,
``message`` and ``details``; the class says what kind of failure it is."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from context_service.contract.agent import ErrorBody


class ApiError(Exception):
    """The service refused or failed a request (or could not be reached: status 0)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None,
                 retry_after: float | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.retry_after = retry_after


class InvalidRequest(ApiError):
    """400: INVALID_REQUEST, VALIDATION_ERROR (``details``: each violated rule) and others."""


class Unauthorized(ApiError):
    """401: the credential is missing, not valid, or expired."""


class Forbidden(ApiError):
    """403: a browser, a missing scope, another context set, or lost authority."""


class NotFound(ApiError):
    """404: the context set, collection, replay or template is not there for this credential."""


class Conflict(ApiError):
    """409 and 410: a replay's task mismatch, or a replay that expired."""


class PackIncomplete(ApiError):
    """422: ``require_complete`` and the pack was not (``details.missing``)."""


class RateLimited(ApiError):
    """429: wait ``retry_after`` seconds."""


class ServiceUnavailable(ApiError):
    """503 (or no answer): the service could not serve the request now."""


class StreamFailed(ApiError):
    """A pack stream ended with an error line after its header."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    410: Conflict, 422: PackIncomplete, 429: RateLimited, 503: ServiceUnavailable}


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    return float(value) if value.isdigit() else None


def error_of(response: httpx.Response, body: bytes) -> ApiError:
    """The typed error of a non-2xx answer whose body ``body`` has been read."""
    try:
        parsed = msgspec.json.decode(body, type=ErrorBody)
        code, message = parsed.code, parsed.message
        details = None if parsed.details is msgspec.UNSET else parsed.details
    except msgspec.DecodeError:
        code, message, details = "HTTP_ERROR", f"the service answered {response.status_code}", None
    cls = _BY_STATUS.get(response.status_code, ApiError)
    return cls(response.status_code, code, message, details, retry_after(response))
