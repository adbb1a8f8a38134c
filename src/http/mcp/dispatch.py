"""A tool call answered by its agent route, in this process: the same Litestar application
receives the call as an HTTP request with the caller's credential, address and host, so the
whole pipeline, the route's rules and its records apply exactly as over HTTP. The request is
handed to the application as ASGI messages directly (no HTTP client in between).

The route's body is the call's arguments re-encoded, never longer than the caller wrote them:
``/mcp`` admitted the caller's bytes under the API's one body limit, and the route checks the
same limit again on what it is handed. Were a float written out longer than sent (msgspec
writes ``1e15`` as ``1000000000000000.0``), a call within the limit would be refused by the
route as too large, and a body could grow on the way in. Strings never grow (msgspec escapes
only what JSON requires, and writes the rest as UTF-8, never longer than an escape)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal
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
    content = route_body(body)
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


def route_body(arguments: dict[str, Any]) -> bytes:
    """``arguments`` as the route's JSON body, each float written as short as JSON allows. The
    walk is iterative: arguments nest as deep as the transport's parser lets through."""
    root: list[Any] = [arguments]
    pending: list[tuple[Any, Any]] = [(root, 0)]
    while pending:
        holder, key = pending.pop()
        value = holder[key]
        if isinstance(value, float):
            holder[key] = msgspec.Raw(shortest(value))
        elif isinstance(value, dict):
            holder[key] = members = dict(value)
            pending.extend((members, name) for name in members)
        elif isinstance(value, list):
            holder[key] = items = list(value)
            pending.extend((items, at) for at in range(len(items)))
    return msgspec.json.encode(root[0])


def shortest(value: float) -> bytes:
    """The shortest JSON text of a float that is read back as the same float, and as a float:
    the fewest digits that round-trip (``repr``'s), written with a point or an exponent,
    whichever is shorter. Any way the caller wrote it has at least as many digits and a point
    or an exponent, so it is never longer than what the caller sent."""
    if not math.isfinite(value):
        return msgspec.json.encode(value)  # refused before any route is called (``not_json``)
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - len(digits)
    if not digits:  # zero
        return b"-0.0" if sign else b"0.0"
    forms = [_with_point(digits, exponent), f"{digits}e{exponent}"]
    if len(digits) > 1:
        forms.append(f"{digits[0]}.{digits[1:]}e{exponent + len(digits) - 1}")
    return (("-" if sign else "") + min(forms, key=len)).encode()


def _with_point(digits: str, exponent: int) -> str:
    """``digits`` times ten to ``exponent``, written with a decimal point."""
    if exponent >= 0:
        return f"{digits}{'0' * exponent}.0"
    point = len(digits) + exponent
    if point > 0:
        return f"{digits[:point]}.{digits[point:]}"
    return f"0.{'0' * -point}{digits}"
