"""Graceful HTTP shutdown: SIGTERM and SIGINT stop the listener, requests in flight get the
grace period to finish, and those still running then are answered ``503 unavailable``.

``Drain`` wraps the ASGI app and knows the requests in flight; ``Server`` is uvicorn's server
with the drain started as it stops listening; it leaves the signals to the caller, which calls
``handle_exit`` (a second SIGINT during the drain ends it at once).

An abandoned handler runs on (a thread cannot be stopped), so each request runs ``abandonable``:
once the drain answered it, the event store refuses its writes, and the 503 stays true.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Iterator

import uvicorn
from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Message,
    Receive,
    Scope,
    Send,
)

from context_service.stop_signals import abandonable

log = logging.getLogger(__name__)
UNAVAILABLE = (b'{"error":"unavailable","message":"the service is shutting down; '
               b'retry against another instance"}')
# the same on ``/api/`` routes, in their error body and headers (agent-context-api.md §1.3)
API_UNAVAILABLE = (b'{"code":"SERVICE_UNAVAILABLE","message":"the service is shutting down; '
                   b'retry against another instance"}')


class _InFlight:
    """One request: answered by the app, or by the drain once the grace is over."""

    __slots__ = ("answered", "api", "send", "started", "task")

    def __init__(self, send: Send, task: asyncio.Task[object] | None, api: bool) -> None:
        self.send = send
        self.task = task
        self.api = api
        self.started = False
        self.answered = False

    async def forward(self, message: Message) -> None:
        if self.answered:
            return  # the drain answered; what the app says now goes nowhere
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)

    async def unavailable(self) -> None:
        answer = API_UNAVAILABLE if self.api else UNAVAILABLE
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(answer)).encode()), (b"connection", b"close")]
        if self.api:
            headers += [(b"cache-control", b"no-store"), (b"retry-after", b"1")]
        start: HTTPResponseStartEvent = {"type": "http.response.start", "status": 503,
                                         "headers": headers}
        body: HTTPResponseBodyEvent = {"type": "http.response.body", "body": answer,
                                       "more_body": False}
        await self.send(start)
        await self.send(body)
        if self.task is not None:
            self.task.cancel()


class Drain:
    """The ASGI app wrapped: ``expire()`` answers 503 to every request that has not started
    its response (and to any that arrives later), and abandons its handler."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.expired = False
        self.answered = 0
        self._in_flight: dict[int, _InFlight] = {}

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await self.app(scope, receive, send)
            return
        call = _InFlight(send, asyncio.current_task(), scope["path"].startswith("/api/"))
        if self.expired:
            call.task = None
            await call.unavailable()
            return
        key = id(call)
        self._in_flight[key] = call
        try:
            with abandonable(lambda: call.answered):
                await self.app(scope, receive, call.forward)
        except asyncio.CancelledError:
            if not call.answered:
                raise
        finally:
            del self._in_flight[key]

    async def expire(self) -> int:
        """Answer 503 to the requests whose response has not started; return how many."""
        self.expired = True
        late = [c for c in self._in_flight.values() if not c.started and not c.answered]
        for call in late:
            call.answered = True
        await asyncio.gather(*(c.unavailable() for c in late), return_exceptions=True)
        self.answered += len(late)
        return len(late)


class Server(uvicorn.Server):
    """uvicorn's server, draining through ``drain`` within ``grace`` seconds."""

    def __init__(self, config: uvicorn.Config, drain: Drain, grace: float) -> None:
        # uvicorn cancels what still runs a little after the drain answered it
        config.timeout_graceful_shutdown = int(grace) + 2
        super().__init__(config)
        self.drain = drain
        self.grace = grace

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Nothing: the process's stop signals have one owner for its whole life, which calls
        ``handle_exit``. uvicorn's own would replace the handlers while serving, restore them
        afterwards and raise the signal again, each a moment in which a signal is not obeyed."""
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        started = time.monotonic()
        in_flight = self.drain.in_flight
        log.info("shutdown: stopped accepting connections",
                 extra={"step": "listener closed", "in_flight": in_flight})
        expiry = asyncio.get_running_loop().call_later(
            self.grace, lambda: asyncio.ensure_future(self.drain.expire()))
        try:
            await super().shutdown(sockets)
        finally:
            expiry.cancel()
        log.info("shutdown: requests drained", extra={
            "step": "requests drained", "in_flight": in_flight,
            "answered_unavailable": self.drain.answered,
            "seconds": round(time.monotonic() - started, 3)})
