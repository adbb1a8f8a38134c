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
    """A pack stream ended with an error line after its header, or ended (or broke off)
    before its footer: the pack is not complete."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    410: Conflict, 422: PackIncomplete, 429: RateLimited, 503: ServiceUnavailable}


def retry_after(response: httpx.Response) -> float | None:
    """The answer's ``Retry-After`` in seconds (a delay; an HTTP date is not read). Only ASCII
    digits: ``str.isdigit`` also accepts ``"\u00b2"``, which a header read as Latin-1 can hold."""
    value = response.headers.get("Retry-After", "").strip()
    return float(value) if value.isascii() and value.isdigit() else None


def unreachable(exc: httpx.TransportError) -> ServiceUnavailable:
    """No answer: the service could not be reached, or did not answer in time. The message is
    never empty (an asynchronous timeout's own text is)."""
    if isinstance(exc, httpx.TimeoutException):
        message = f"the service did not answer in time ({type(exc).__name__})"
    else:
        message = str(exc) or type(exc).__name__
    return ServiceUnavailable(0, "UNREACHABLE", message)


def interrupted(exc: httpx.TransportError | None = None) -> StreamFailed:
    """A pack stream that ended before its footer (``exc``: the connection broke off)."""
    if exc is None:
        return StreamFailed(200, "STREAM_INCOMPLETE", "the stream ended before its footer")
    return StreamFailed(200, "STREAM_INCOMPLETE", "the stream broke off before its footer: "
                        f"{str(exc) or type(exc).__name__}")


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
