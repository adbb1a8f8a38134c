"""The agent API's errors as exceptions: each carries the answer's status, ``code``,
``message`` and ``details``; the class says what kind of failure it is."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

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

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled by its fields (``concurrent.futures``, ``multiprocessing``): the default
        # calls ``cls(*self.args)``, the one formatted message, which is not this signature
        return (type(self), (self.status, self.code, self.message, self.details,
                             self.retry_after))


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


class InvalidAnswer(ApiError):
    """A 2xx answer that is not what the contract says: not JSON (the URL names some other
    server, a proxy's page), cut short, or of another shape. ``code``: ``INVALID_ANSWER``."""


class StreamFailed(ApiError):
    """A pack stream ended with an error line after its header, or ended (or broke off)
    before its footer: the pack is not complete."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: InvalidRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    410: Conflict, 422: PackIncomplete, 429: RateLimited, 503: ServiceUnavailable}


def retry_after(response: httpx.Response) -> float | None:
    """The answer's ``Retry-After`` in seconds: a delay (only ASCII digits: ``str.isdigit`` also
    accepts ``"\u00b2"``, which a header read as Latin-1 can hold), or an HTTP date counted
    from the answer's own ``Date`` (the service's clock), else from this machine's; a date past
    is no wait. A value beyond every wait is the caller's to refuse (``Retry.max_wait``)."""
    value = response.headers.get("Retry-After", "").strip()
    if value.isascii() and value.isdigit():
        return float(value)
    until = _http_date(value)
    if until is None:
        return None
    now = _http_date(response.headers.get("Date", "")) or datetime.now(UTC)
    return max(0.0, (until - now).total_seconds())


def _http_date(value: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def unreachable(exc: httpx.TransportError) -> ServiceUnavailable:
    """No answer: the service could not be reached, or did not answer in time. The message is
    never empty (an asynchronous timeout's own text is)."""
    if isinstance(exc, httpx.TimeoutException):
        message = f"the service did not answer in time ({type(exc).__name__})"
    elif isinstance(exc, httpx.LocalProtocolError):  # its text can quote a header sent
        message = f"the request is not valid HTTP ({type(exc).__name__})"
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
        code, message, details = "HTTP_ERROR", _what_came(response), None
    cls = _BY_STATUS.get(response.status_code, ApiError)
    return cls(response.status_code, code, message, details, retry_after(response))


def _what_came(response: httpx.Response) -> str:
    """An answer without the API's error body (a proxy's page, an empty body, a redirect): its
    status line, and where a redirect points (the URL given is likely not the service's)."""
    said = f"the service answered {response.status_code} {response.reason_phrase}".rstrip()
    location = response.headers.get("Location", "")
    if response.is_redirect and location:
        parts = urlsplit(location)  # without a query or fragment, which may carry a state
        said += (f": a redirect to {urlunsplit((*parts[:3], '', ''))}, which the client does "
                 "not follow")
    return said


def invalid_answer(exc: msgspec.DecodeError, status: int, answer: str) -> InvalidAnswer:
    """A 2xx answer that did not decode as ``answer`` (``exc``: msgspec's reason)."""
    return InvalidAnswer(status, "INVALID_ANSWER",
                         f"the service's answer is not a valid {answer}: {exc}")


def unreadable(exc: msgspec.DecodeError, cut: bool) -> StreamFailed:
    """A pack stream's line that did not decode: the last one, cut without its line feed, or
    one not of the contract."""
    if cut:
        return StreamFailed(200, "STREAM_INCOMPLETE",
                            "the stream broke off mid-line before its footer")
    return StreamFailed(200, "INVALID_ANSWER", f"a line of the stream is not valid: {exc}")


def overlong(limit: int) -> StreamFailed:
    return StreamFailed(200, "INVALID_ANSWER",
                        f"a line of the stream is longer than {limit} bytes")
