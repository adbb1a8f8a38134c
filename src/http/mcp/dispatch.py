"""A tool call answered by its agent route, in this process: the same Litestar application
receives the call as an HTTP request with the caller's credential, address and host, so the
whole pipeline, the route's rules and its records apply exactly as over HTTP. The request is
handed to the application as ASGI messages directly (no HTTP client in between)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import anyio
import msgspec

FORWARDED = (b"authorization", b"host", b"user-agent")
_JSON = (b"content-type", b"application/json")


class Answer(NamedTuple):
    status: int
    body: bytes
    retry_after: str | None  # the answer's ``Retry-After`` (a 429 or a 503), if any


async def call_route(scope: Mapping[str, Any], path: str, body: dict[str, Any]) -> Answer:
    """POST ``body`` to the agent route ``path`` of the application serving ``scope``: the
    answer's status, bytes and ``Retry-After``."""
    content = msgspec.json.encode(body)
    headers = [(k, v) for k, v in scope["headers"] if k in FORWARDED]
    headers += [_JSON, (b"content-length", str(len(content)).encode())]
    route_scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": scope.get("scheme", "http"), "path": path, "raw_path": path.encode(),
        "root_path": "", "query_string": b"", "headers": headers,
        "client": scope.get("client") or ("127.0.0.1", 0), "server": scope.get("server"),
        "extensions": {}}
    sent = False
    answered = anyio.Event()
    status = 500
    retry_after: str | None = None
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:  # the body was read: the client stays until the answer is complete
            await answered.wait()
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": content, "more_body": False}

    async def send(message: Mapping[str, Any]) -> None:
        nonlocal status, retry_after
        if message["type"] == "http.response.start":
            status = int(message["status"])
            retry_after = next((v.decode("latin-1") for k, v in message.get("headers", ())
                                if k.lower() == b"retry-after"), None)
        elif message["type"] == "http.response.body":
            chunks.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                answered.set()

    await scope["app"](route_scope, receive, send)
    return Answer(status, b"".join(chunks), retry_after)
