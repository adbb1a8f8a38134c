"""The Host names the service answers for (``CS_ALLOWED_HOSTS``), checked before routing: a web
page that rebinds its own DNS name to the service's address reaches it under that name, and is
answered ``421`` in the body style of the path's family. A Host that is the very IP address the
connection was accepted on is always answered: no rebound name looks like that, and it is how
Kubernetes probes and metrics scrapers address a pod.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

import msgspec
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Receive, Scope, Send

ANY = "*"
MESSAGE = "this service does not answer for the host named in the request"
_enc = msgspec.json.Encoder()


def host_name(value: str) -> str:
    """The host part of a ``Host`` value, lower case: ``[::1]:8080`` → ``::1``,
    ``Example.org.:80`` → ``example.org``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value[:-1] if value.endswith(".") else value


def same_address(host: str, server: str) -> bool:
    """``host`` is an IP literal naming the address ``server`` (the socket's own)."""
    try:
        return ipaddress.ip_address(host) == ipaddress.ip_address(server)
    except ValueError:
        return False


def allowed(host: str | None, names: frozenset[str], server: str | None) -> bool:
    if ANY in names:
        return True
    if host is None:
        return False
    name = host_name(host)
    return name in names or (server is not None and same_address(name, server))


def _host(headers: Iterable[tuple[bytes, bytes]]) -> str | None:
    for key, value in headers:
        if key.lower() == b"host":
            return value.decode("latin-1")
    return None


def refusal(path: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """421 in the body style of the path's family (``/api/`` or ``/v1`` and the rest)."""
    headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
    if path.startswith("/api/"):
        headers.append((b"cache-control", b"no-store"))
        return headers, _enc.encode({"code": "MISDIRECTED_REQUEST", "message": MESSAGE})
    return headers, _enc.encode({"error": "misdirected_request", "message": MESSAGE})


class HostGuard:
    """ASGI middleware in front of routing; ``names`` as ``Settings.allowed_host_names``."""

    def __init__(self, app: ASGIApp, names: frozenset[str]) -> None:
        self.app = app
        self.names = frozenset(n.lower() for n in names)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP or ANY in self.names:
            await self.app(scope, receive, send)
            return
        server = scope.get("server")
        if allowed(_host(scope["headers"]), self.names, server[0] if server else None):
            await self.app(scope, receive, send)
            return
        headers, body = refusal(scope["path"])
        await send({"type": "http.response.start", "status": 421,
                    "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body, "more_body": False})
