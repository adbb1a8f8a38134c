"""The HTTP client: one ``httpx.Client`` per invocation, the configured headers on every request,
and every non-2xx answer turned into a ``ServiceError`` carrying the service's message."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import httpx

from context_service.client.routes import UNCARRIABLE, carriable
from context_service.client.routes import segment as segment  # one path segment, for every command
from context_service.contextctl.settings import Settings
from context_service.urls import credentials, redacted

# the environment's proxies, which httpx reads (their user and password are never printed)
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                   "all_proxy")
# what a terminal would act on rather than show (C0 and C1 controls and DEL), and the line and
# paragraph separators, line breaks to log viewers and ``str.splitlines`` (a table's rows)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class CommandError(Exception):
    """The command could not be carried out (exit code 1); ``str()`` is what is printed."""


class ServiceError(CommandError):
    """The service refused or failed a request, or could not be reached. ``details`` are the
    ``(path, message)`` pairs of an ``/api/`` error body, printed one a line after the message."""

    def __init__(self, message: str, details: Sequence[tuple[str, str]] = (),
                 status: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.details = tuple(details)
        self.status = status

    def __str__(self) -> str:
        return "\n".join([self.message, *(f"  {path}: {text}" for path, text in self.details)])


def printable(text: str) -> str:
    """``text`` as one line a terminal shows as is: a line break or an escape sequence in a
    message (a proxy's page, a name quoted back) is written as its JSON escape instead of
    splitting the line or driving the terminal."""
    return _CONTROL.sub(lambda found: json.dumps(found.group())[1:-1], text)


@dataclass(frozen=True)
class Reply:
    status: int
    raw: bytes
    position: int | None = None  # X-Context-Position: the log position the request recorded
    url: str = ""  # the service, as messages show it (``redact``)

    @cached_property
    def data(self) -> Any:
        """The parsed body; ``None`` for a ``204``. Any other success carries a JSON body
        (spec 1.1.1): an empty one is another server's answer, not an empty document."""
        if not self.raw.strip() and self.status == 204:
            return None
        try:
            return json.loads(self.raw)
        except ValueError as exc:
            raise not_json(self.url) from exc

    def document(self) -> dict[str, Any]:
        """The body as the JSON object every control-API answer is (spec 1.1.1)."""
        data = self.data
        if not isinstance(data, dict):
            raise not_json(self.url)
        return data

    def listing(self) -> dict[str, Any]:
        """A list answer: an object whose ``items`` is an array of objects and whose
        ``nextCursor``, when present, is a string (spec 1.1.8)."""
        data = self.document()
        items, cursor = data.get("items"), data.get("nextCursor")
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items) or (
                cursor is not None and not isinstance(cursor, str)):
            raise not_json(self.url)
        return data


def not_json(url: str) -> ServiceError:
    """What an answer that is not the service's JSON means: ``CS_URL`` names some other web
    server. A ``ServiceError``, like any other failed request: completion then completes
    nothing rather than printing it into the shell."""
    return ServiceError(f"the answer from {url or 'the service'} is not the context service's "
                        "JSON (is CS_URL the context service?)")


def service_error(response: httpx.Response, url: str = "") -> ServiceError:
    """The body's ``message`` (with the ``/api/`` family's ``details``), else the status line.
    A body that is no JSON at all names where it came from (``url``, the service's address as
    printed): another web server at ``CS_URL`` refuses the service's paths with a page of its
    own, and "context service returned 404" sent the person looking at the context."""
    try:
        body = response.json()
    except ValueError:
        if url:
            return ServiceError(f"the answer from {url} ({response.status_code} "
                                f"{response.reason_phrase}) is not the context service's JSON "
                                "(is CS_URL the context service?)", status=response.status_code)
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message:
        return ServiceError(f"context service returned {response.status_code} "
                            f"{response.reason_phrase}".strip(), status=response.status_code)
    details = body.get("details") if isinstance(body, dict) else None
    pairs = [(printable(str(d.get("path", ""))), printable(str(d.get("message", ""))))
             for d in details if isinstance(d, dict)] if isinstance(details, list) else []
    return ServiceError(printable(message), pairs, response.status_code)


def unseen(cursor: str | None, followed: set[str], what: str) -> str | None:
    """The ``nextCursor`` to follow, ``None`` after the last page. A cursor already followed
    (or started from; ``followed`` remembers them) leads to pages already read: following it
    would repeat their ``what``, for ever from a service that keeps answering it."""
    if not cursor:
        return None
    if cursor in followed:
        raise ServiceError(f"the service answered the cursor {printable(cursor)} again: "
                           f"following it would read the same {what} again")
    followed.add(cursor)
    return cursor


def unusable(settings: Settings) -> ServiceError | None:
    """Why no request can be sent with ``settings``: ``CS_URL`` is no URL, or a header value
    no request can carry, naming the variable and never quoting its value (httpx's own error
    quotes the header, and ``CS_TOKEN`` with it)."""
    try:
        httpx.URL(settings.url)
    except httpx.InvalidURL as exc:
        return ServiceError(f"CS_URL is not a valid URL ({redacted(settings.url)}): "
                            f"{scrubbed(str(exc), settings.url)}")
    for variable, value in (("CS_TOKEN", settings.token), ("CS_SUBJECT", settings.subject)):
        if not carriable(value):
            return ServiceError(f"{variable} {UNCARRIABLE}")
    return None


def scrubbed(text: str, *urls: str) -> str:
    """``text`` without any secret the ``urls`` carry."""
    found = {secret for url in urls for secret in credentials(url)}
    for secret in sorted(found, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def position(response: httpx.Response) -> int | None:
    value = response.headers.get("X-Context-Position", "")
    return int(value) if value.isdigit() else None


class Client:
    """Requests against ``settings.url`` (the control API; the agent API's commands use
    ``context_service.client``, see ``agent_api``)."""

    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None,
                 user_agent: str = "contextctl") -> None:
        self.settings = settings
        headers = {"User-Agent": user_agent}
        if settings.token:
            headers["X-SH-Auth"] = settings.token
        # a configuration no request can carry fails the first request, as a ServiceError:
        # completion (which makes its client outside any handler) then completes nothing
        self._refused = unusable(settings)
        if self._refused is None:
            try:
                self._http = httpx.Client(base_url=settings.url, timeout=settings.timeout,
                                          headers=headers, transport=transport)
                return
            except (httpx.InvalidURL, ImportError, ValueError) as exc:
                self._refused = ServiceError(  # a proxy variable httpx cannot use
                    "the proxy settings of the environment cannot be used: "
                    + scrubbed(str(exc), *(os.environ.get(v, "") for v in PROXY_VARIABLES)))
        self._http = httpx.Client(timeout=settings.timeout, transport=transport, trust_env=False)

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, body: Any = None,
                params: Mapping[str, str] | None = None, content: Iterable[bytes] | None = None,
                headers: Mapping[str, str] | None = None) -> Reply:
        if self._refused is not None:
            raise self._refused
        sent = dict(headers or {})
        if self.settings.subject:
            sent["X-Context-Subject"] = self.settings.subject
        if body is not None:
            content = [json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()]
            sent["Content-Type"] = "application/json"
        try:
            response = self._http.request(method, path, params=params, headers=sent,
                                          content=content)
        except httpx.TimeoutException as exc:
            raise ServiceError(f"the context service at {redacted(self.settings.url)} did not "
                               f"answer in time ({exc.__class__.__name__})") from exc
        except httpx.HTTPError as exc:
            # httpx's text may quote what it was given (a URL): never its password
            raise ServiceError(f"cannot reach the context service at "
                               f"{redacted(self.settings.url)}: "
                               f"{scrubbed(str(exc), self.settings.url)}") from exc
        if not response.is_success:
            raise service_error(response, redacted(self.settings.url))
        return Reply(response.status_code, response.content, position(response),
                     redacted(self.settings.url))

    def get(self, path: str, params: Mapping[str, str] | None = None) -> Reply:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None,
             params: Mapping[str, str] | None = None) -> Reply:
        return self.request("POST", path, body=body, params=params)

    def put(self, path: str, body: Any = None) -> Reply:
        return self.request("PUT", path, body=body)

    def delete(self, path: str, body: Any = None,
               params: Mapping[str, str] | None = None) -> Reply:
        return self.request("DELETE", path, body=body, params=params)


def context_path(namespace: str, name: str | None = None, *suffix: str) -> str:
    """``/v1/namespaces/{ns}/contexts[/{name}[/suffix...]]``."""
    path = f"/v1/namespaces/{segment(namespace)}/contexts"
    if name is not None:
        path += "/" + segment(name)
    return path + "".join("/" + segment(s) for s in suffix)
