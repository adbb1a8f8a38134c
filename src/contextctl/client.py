"""The HTTP client: one ``httpx.Client`` per invocation, the configured headers on every request,
and every non-2xx answer turned into a ``ServiceError`` carrying the service's message."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import quote

import httpx

from context_service.contextctl.settings import Settings


class CommandError(Exception):
    """The command could not be carried out (exit code 1); ``str()`` is what is printed."""


class ServiceError(CommandError):
    """The service refused or failed a request, or could not be reached."""


@dataclass(frozen=True)
class Reply:
    status: int
    raw: bytes

    @cached_property
    def data(self) -> Any:
        return json.loads(self.raw) if self.raw.strip() else None


def segment(value: str) -> str:
    """One path segment, percent-encoded (a name may hold ``/`` or ``:``)."""
    return quote(value, safe="")


def error_message(response: httpx.Response) -> str:
    """The body's ``message`` (with the agent API's ``details``), else the status line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    message = body.get("message") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message:
        return f"context service returned {response.status_code} {response.reason_phrase}".strip()
    details = body.get("details") if isinstance(body, dict) else None
    if isinstance(details, list) and details:
        parts = [f"{d.get('path', '')}: {d.get('message', '')}" for d in details
                 if isinstance(d, dict)]
        return f"{message}: {'; '.join(parts)}"
    return message


class Client:
    """Requests against ``settings.url``; ``agent=True`` authenticates with the agent credential
    instead of the subject header."""

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
                headers: Mapping[str, str] | None = None, agent: bool = False) -> Reply:
        sent = dict(headers or {})
        if agent:
            if not self.settings.agent_token:
                raise ServiceError("an agent credential is required: set CS_AGENT_TOKEN")
            sent["Authorization"] = f"Bearer {self.settings.agent_token}"
        elif self.settings.subject:
            sent["X-Context-Subject"] = self.settings.subject
        if body is not None:
            content = [json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()]
            sent["Content-Type"] = "application/json"
        try:
            response = self._http.request(method, path, params=params, headers=sent,
                                          content=content)
        except httpx.TimeoutException as exc:
            raise ServiceError(f"the context service at {self.settings.url} did not answer "
                               f"in time ({exc.__class__.__name__})") from exc
        except httpx.HTTPError as exc:
            raise ServiceError(
                f"cannot reach the context service at {self.settings.url}: {exc}") from exc
        if not response.is_success:
            raise ServiceError(error_message(response))
        return Reply(response.status_code, response.content)

    def get(self, path: str, params: Mapping[str, str] | None = None,
            agent: bool = False) -> Reply:
        return self.request("GET", path, params=params, agent=agent)

    def post(self, path: str, body: Any = None, params: Mapping[str, str] | None = None,
             agent: bool = False) -> Reply:
        return self.request("POST", path, body=body, params=params, agent=agent)

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
