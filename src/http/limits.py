"""The API's one request-body limit (1 MiB, both specs), enforced where bytes arrive: a body
declared larger is never read, and a chunked one is read no further than one byte past it. The
route still answers ``400 request body too large`` at its own point of its order of checks (after
the subject on ``/v1``, after the agent pipeline on ``/api/agent/v1``), but at once: it is handed
a stand-in one byte over the limit instead of waiting for bytes it will refuse anyway.
"""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPRequestEvent,
    Message,
    Receive,
    ReceiveMessage,
    Scope,
    Send,
)

MAX_BODY = 1024 * 1024
# What "only whitespace" means for a body (rule 2): JSON's whitespace, the only bytes the decoder
# lets follow a value (a form feed or a byte order mark is a malformed body, not an absent one).
JSON_WHITESPACE = b" \t\r\n"
# Handed to the app in place of a body past the limit: whitespace one byte over it, which every
# body reader refuses by its length before anything else (``body.check_present``).
OVERSIZED = b" " * (MAX_BODY + 1)
# What the app may ever buffer of one body: the limit plus the one byte that marks it too large.
APP_LIMIT = len(OVERSIZED)
_CLOSE = (b"connection", b"close")


def declared_length(headers: list[tuple[bytes, bytes]]) -> int | None:
    """The request's ``Content-Length`` (the server has already refused a malformed one)."""
    for name, value in headers:
        if name.lower() == b"content-length":
            return int(value) if value.strip().isdigit() else None
    return None


class BodyLimit:
    """ASGI middleware in front of routing: bodies within the limit pass untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        headers = list(scope["headers"])
        declared = declared_length(headers)
        if declared is not None and declared <= MAX_BODY:
            await self.app(scope, receive, send)  # the server delivers no more than declared
            return
        body = _Capped(receive)
        if declared is not None:  # announced too large: not one byte of it is read
            body.cut = True
            headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
            scope = {**scope, "headers": [*headers, (b"content-length", str(APP_LIMIT).encode())]}
        await self.app(scope, body.receive, body.closing(send))


class _Capped:
    """A body reader that stops at the limit: the stand-in when the body was announced too
    large, else the chunks as they come until one byte past the limit."""

    def __init__(self, receive: Receive) -> None:
        self.inner = receive
        self.cut = False
        self.given = 0
        self.done = False

    async def receive(self) -> ReceiveMessage:
        if self.done:
            return await self._disconnect()
        if self.cut:
            self.done = True
            return HTTPRequestEvent(type="http.request", body=OVERSIZED, more_body=False)
        message = await self.inner()
        if message["type"] != "http.request":
            return message
        chunk: bytes = message.get("body", b"")
        self.given += len(chunk)
        if self.given > MAX_BODY:  # the rest is never read: the route refuses the body
            self.cut = self.done = True
            keep = len(chunk) - (self.given - APP_LIMIT)
            return HTTPRequestEvent(type="http.request", body=chunk[:keep], more_body=False)
        self.done = not message.get("more_body", False)
        return message

    async def _disconnect(self) -> ReceiveMessage:
        """After the body: only the end of the connection is news (body bytes past a cut are
        dropped, never kept)."""
        while True:
            message = await self.inner()
            if message["type"] != "http.request":
                return message

    def closing(self, send: Send) -> Send:
        """The answer to a body left unread closes the connection: its rest cannot be told from
        a next request."""

        async def wrapped(message: Message) -> None:
            if self.cut and message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", ())
                           if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, _CLOSE]}
            await send(message)

        return wrapped
