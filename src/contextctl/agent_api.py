"""The agent API (``/api/agent/v1``) for contextctl's commands: ``context_service.client`` with
the invocation's agent credential, answers decoded into the contract's Structs along with the
service's bytes (``--json``), and the client's typed errors as the CLI's ``ServiceError``."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from http import HTTPStatus
from typing import Any, Generic, TypeVar

import click
import httpx
import msgspec

from context_service.client import ApiError, Client, Retry
from context_service.contextctl import output
from context_service.contextctl.client import ServiceError, not_json, printable
from context_service.contextctl.options import App
from context_service.urls import redacted

T = TypeVar("T")
# the answer arrives as the service gave it: a 429 or 503 is reported, never waited out
NO_RETRY = Retry(attempts=1)
NO_TOKEN = "an agent credential is required: set CS_AGENT_TOKEN"


@dataclass(frozen=True)
class Answer(Generic[T]):
    """An agent route's answer: typed, and the exact bytes the service sent."""

    value: T
    raw: bytes

    @cached_property
    def data(self) -> Any:
        return json.loads(self.raw)


class AgentApi:
    """Requests with the credential in ``CS_AGENT_TOKEN`` (and ``CS_TOKEN``'s ``X-SH-Auth``);
    a context manager, closed when the command is done."""

    def __init__(self, app: App, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings = app.settings
        headers = {"User-Agent": app.user_agent}
        if settings.token:
            headers["X-SH-Auth"] = settings.token
        self.http = httpx.Client(base_url=settings.url, timeout=settings.timeout,
                                 transport=transport)
        self.client = Client(token=settings.agent_token, retry=NO_RETRY, http=self.http,
                             headers=headers)

    def __enter__(self) -> AgentApi:
        return self

    def __exit__(self, *_: object) -> None:
        self.http.close()

    def ask(self, path: str, body: msgspec.Struct, answer: type[T]) -> Answer[T]:
        return Answer(*self._call(lambda: self.client.exchange(path, body, answer)))

    def raw(self, path: str, body: msgspec.Struct) -> bytes:
        return self._call(lambda: self.client.call(path, body))

    def _call(self, send: Callable[[], T]) -> T:
        if not self.settings.agent_token:
            raise ServiceError(NO_TOKEN)
        try:
            return send()
        except ApiError as exc:
            raise service_error(exc, redacted(self.settings.url)) from exc
        except msgspec.DecodeError as exc:
            raise not_json(redacted(self.settings.url)) from exc
        except msgspec.ValidationError as exc:
            raise ServiceError(f"the answer from {redacted(self.settings.url)} is not what this "
                               f"contextctl expects: {exc}") from exc


def service_error(exc: ApiError, url: str) -> ServiceError:
    """The CLI's message of a client error: the service's message and ``details`` lines, the
    status line of an answer without one, or why the service could not be reached."""
    if exc.status == 0:
        cause = exc.__cause__
        if isinstance(cause, httpx.TimeoutException):
            return ServiceError(f"the context service at {url} did not answer in time "
                                f"({cause.__class__.__name__})")
        return ServiceError(f"cannot reach the context service at {url}: {cause or exc}")
    if exc.code == "HTTP_ERROR" or not exc.message:
        return ServiceError(f"context service returned {exc.status} {_phrase(exc.status)}"
                            .strip(), status=exc.status)
    details = exc.details if isinstance(exc.details, list) else []
    pairs = [(printable(str(d.get("path", ""))), printable(str(d.get("message", ""))))
             for d in details if isinstance(d, dict)]
    return ServiceError(printable(exc.message), pairs, exc.status)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def emit(answer: Answer[T], fmt: str, text: Callable[[T], None]) -> None:
    """``--json`` prints the body exactly as the service sent it; text reads the typed answer."""
    if fmt == output.JSON:
        click.echo(answer.raw.decode())
    elif fmt == output.YAML:
        output.dump(answer.data, output.YAML)
    else:
        text(answer.value)


def ask(app: App, path: str, body: msgspec.Struct, answer: type[T]) -> Answer[T]:
    """One request of a command: the typed answer of the agent route ``path``."""
    with AgentApi(app) as api:
        return api.ask(path, body, answer)


def ask_raw(app: App, path: str, body: msgspec.Struct) -> bytes:
    """One request of a command: the agent route's exact bytes (an ndjson stream, whole), each
    line known to be JSON."""
    with AgentApi(app) as api:
        raw = api.raw(path, body)
    try:
        for text in raw.splitlines():
            if text.strip():
                msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise not_json(redacted(app.settings.url)) from exc
    return raw


def score(value: float | msgspec.UnsetType) -> int | float | None:
    """A score as the service wrote it: a whole one without a fraction (``1``, not ``1.0``)."""
    if isinstance(value, msgspec.UnsetType):
        return None
    return int(value) if value.is_integer() else value
