"""The HTTP client: one ``httpx.Client`` per invocation, the configured headers on every request,
and every non-2xx answer turned into a ``ServiceError`` carrying the service's message."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import quote

import httpx

from context_service.contextctl.settings import Settings
from context_service.urls import redacted


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


@dataclass(frozen=True)
class Reply:
    status: int
    raw: bytes
    position: int | None = None  # X-Context-Position: the log position the request recorded
    url: str = ""  # the service, as messages show it (``redact``)

    @cached_property
    def data(self) -> Any:
        try:
            return json.loads(self.raw) if self.raw.strip() else None
        except ValueError as exc:
            raise not_json(self.url) from exc


def not_json(url: str) -> CommandError:
    """What an answer that is not JSON means: ``CS_URL`` names some other web server."""
    return CommandError(f"the answer from {url or 'the service'} is not the context service's "
                        "JSON (is CS_URL the context service?)")


def segment(value: str) -> str:
    """One path segment, percent-encoded (a name may hold ``/`` or ``:``)."""
    return quote(value, safe="")


def service_error(response: httpx.Response) -> ServiceError:
    """The body's ``message`` (with the ``/api/`` family's ``details``), else the status line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message:
        return ServiceError(f"context service returned {response.status_code} "
                            f"{response.reason_phrase}".strip(), status=response.status_code)
    details = body.get("details") if isinstance(body, dict) else None
    pairs = [(str(d.get("path", "")), str(d.get("message", ""))) for d in details
             if isinstance(d, dict)] if isinstance(details, list) else []
    return ServiceError(message, pairs, response.status_code)


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
        self._http = httpx.Client(base_url=settings.url, timeout=settings.timeout,
                                  headers=headers, transport=transport)

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, body: Any = None,
                params: Mapping[str, str] | None = None, content: Iterable[bytes] | None = None,
                headers: Mapping[str, str] | None = None) -> Reply:
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
            raise ServiceError(f"cannot reach the context service at "
                               f"{redacted(self.settings.url)}: {exc}") from exc
        if not response.is_success:
            raise service_error(response)
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
