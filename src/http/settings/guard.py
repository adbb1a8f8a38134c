"""The settings pages' browser rules, as one ASGI middleware:

- a state-changing request that a browser marks (``Origin`` or ``Sec-Fetch-*``) to ``/v1/``,
  ``/api/w/`` or ``/settings`` must carry the page's CSRF token (``csrf.passes``); other
  clients (curl, SDKs, the gateway's own calls) send no such headers and are not affected,
  and ``/api/agent/v1`` keeps refusing browsers before anything else;
- every ``/settings`` answer carries the admin-console headers: a script-only-from-self CSP,
  ``X-Frame-Options: DENY``, ``nosniff``, no referrer, and ``Cache-Control: no-store`` on pages
  (``ConsoleHeaders`` sets them on the answers made in front of routing).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any

import msgspec
from litestar.enums import ScopeType
from litestar.middleware.base import MiddlewareProtocol
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    Scope,
    Send,
)
from litestar.utils import normalize_path

from context_service.http.common import from_browser
from context_service.http.settings import csrf

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
GUARDED = ("/v1/", "/api/w/", "/settings/")
STATIC = "/settings/static/"
REFUSED = "csrf token is missing or invalid; reload the page and try again"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
       "font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
       "base-uri 'none'")
HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=(), payment=()"),
)
_enc = msgspec.json.Encoder()


def is_settings(path: str) -> bool:
    return path == "/settings" or path.startswith("/settings/")


def cookies(headers: Iterable[tuple[bytes, bytes]], name: str) -> list[str]:
    """Every value of the cookie ``name``, in the order sent: a browser may hold several (one
    of another path or a parent domain besides the page's own)."""
    found = []
    for key, value in headers:
        if key.lower() != b"cookie":
            continue
        for part in value.decode("latin-1").split(";"):
            k, sep, v = part.strip().partition("=")
            if sep and k == name:
                found.append(v)
    return found


def page_token(key: bytes, headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    """The browser's CSRF token a page keeps: the last ``cs_csrf`` cookie this service signed
    (None: the page issues one). The last, because a browser sends the cookies of longer paths
    first: the page's own (``Path=/``) comes after any that a sibling host tossed for the
    pages' paths, so tabs already open keep the token they hold."""
    signed = [v for v in cookies(headers, csrf.COOKIE) if csrf.valid(key, v)]
    return signed[-1] if signed else None


def header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def refusal(path: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """403 in the body style of the path's family."""
    headers = [(b"content-type", b"application/json")]
    if path.startswith("/api/"):
        headers.append((b"cache-control", b"no-store"))
        return headers, _enc.encode({"code": "FORBIDDEN", "message": REFUSED})
    return headers, _enc.encode({"error": "forbidden", "message": REFUSED})


def csrf_key(app: Any) -> bytes:
    """The app's CSRF signing key, derived once from the credential key (shared by every
    replica); an app without the agent services signs with a key of this process."""
    state = app.state
    key: bytes | None = state.get("settings_csrf_key")
    if key is None:
        agent = state.services.agent
        key = csrf.signing_key(agent.key if agent is not None else secrets.token_bytes(32))
        state.settings_csrf_key = key
    return key


def _passes(key: bytes, headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """The header repeats any of the ``cs_csrf`` cookies this service signed: which of them the
    page embedded depends on the cookies its own path received, and a cookie tossed for other
    paths than the write's does not come with the write. Each is a token no other site can put
    in a header, so any one is proof enough."""
    token = header(headers, csrf.HEADER.encode())
    return any(csrf.passes(key, token, cookie) for cookie in cookies(headers, csrf.COOKIE))


class SettingsGuard(MiddlewareProtocol):
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        # the path as the router reads it (``//api/w/...`` is ``/api/w/...``), whether or not
        # routing has already collapsed it: the rule must not depend on where it is mounted
        path = normalize_path(scope["path"])
        headers = scope["headers"]
        if (scope["method"] not in SAFE_METHODS and (path + "/").startswith(GUARDED)
                and from_browser(headers)
                and not _passes(csrf_key(scope["app"]), headers)):
            extra, body = refusal(path)
            if is_settings(path):
                extra.extend(HEADERS)
            length = (b"content-length", str(len(body)).encode())
            await send(HTTPResponseStartEvent(type="http.response.start", status=403,
                                              headers=[*extra, length]))
            await send(HTTPResponseBodyEvent(type="http.response.body", body=body,
                                             more_body=False))
            return
        if is_settings(path):
            send = _with_headers(send, page=not path.startswith(STATIC))
        await self.app(scope, receive, send)


class ConsoleHeaders:
    """ASGI middleware in front of routing: the admin-console headers on the ``/settings``
    answers no settings route makes (the Host rule's ``421``, routing's refusal of a method
    Litestar does not know). The guard sets the same headers; each is sent once."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == ScopeType.HTTP:
            path = normalize_path(scope["path"])
            if is_settings(path):
                send = _with_headers(send, page=not path.startswith(STATIC))
        await self.app(scope, receive, send)


def _with_headers(send: Send, page: bool) -> Send:
    extra = [*HEADERS, (b"cache-control", b"no-store")] if page else list(HEADERS)
    replaced = {name for name, _ in extra}

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [(k, v) for k, v in message.get("headers", ())
                    if k.lower() not in replaced]
            message["headers"] = [*kept, *extra]
        await send(message)

    return wrapped
