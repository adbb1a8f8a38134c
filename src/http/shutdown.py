"""Graceful HTTP shutdown: SIGTERM and SIGINT stop the listener, requests in flight get the
grace period to finish, and those still running then are answered ``503 unavailable``; a pack
stream already under way then ends with the stream's error line (agent-context-api.md §7.14), so
its reader can tell the service stopping from the network failing.

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
import weakref
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

from context_service.domain.pack.render import stream_error_line
from context_service.stop_signals import abandonable

log = logging.getLogger(__name__)
SHUTTING_DOWN = "the service is shutting down; retry against another instance"
UNAVAILABLE = (b'{"error":"unavailable","message":"the service is shutting down; '
               b'retry against another instance"}')
# the same on ``/api/`` routes, in their error body and headers (agent-context-api.md §1.3)
API_UNAVAILABLE = (b'{"code":"SERVICE_UNAVAILABLE","message":"the service is shutting down; '
                   b'retry against another instance"}')
# how a response of this type that has started ends when the drain cuts it: an ndjson pack
# stream with its error line, the only line that says it failed (agent-context-api.md §7.14)
ENDINGS = {b"application/x-ndjson": stream_error_line(SHUTTING_DOWN)}
# request tasks the drain answered 503 before their response started: what their clients got,
# whatever their handlers then send (it goes nowhere)
_UNAVAILABLE: weakref.WeakSet[asyncio.Task[object]] = weakref.WeakSet()


def answered_unavailable(task: asyncio.Task[object] | None) -> bool:
    """Whether the drain answered ``task``'s request 503 before its response started."""
    return task is not None and task in _UNAVAILABLE


def _ending(start: HTTPResponseStartEvent) -> bytes | None:
    """The last body the drain sends a response that ``start`` began, if it has one."""
    for name, value in start.get("headers", ()):
        if name.lower() == b"content-type":
            return ENDINGS.get(value.split(b";")[0].strip().lower())
    return None


class _InFlight:
    """One request: answered by the app, or by the drain once the grace is over."""

    __slots__ = ("answered", "api", "ended", "ending", "finished", "replied", "send",
                 "started", "task")

    def __init__(self, send: Send, task: asyncio.Task[object] | None, api: bool) -> None:
        self.send = send
        self.task = task
        self.api = api
        self.started = False
        self.finished = False  # its last body was sent
        self.ending: bytes | None = None  # how the drain ends it once started (a stream)
        self.answered = False
        self.replied: asyncio.Event | None = None  # set once the drain's 503 is sent
        self.ended = False  # the app returned

    def answer_unavailable(self) -> None:
        """The drain answers this request 503 from now: what its client gets, and what it is
        counted as, whatever its handler still sends."""
        self.answered = True
        self.replied = asyncio.Event()
        if self.task is not None:
            _UNAVAILABLE.add(self.task)

    async def forward(self, message: Message) -> None:
        if self.answered:
            return  # the drain answered; what the app says now goes nowhere
        if message["type"] == "http.response.start":
            self.started = True
            self.ending = _ending(message)
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.finished = True
        await self.send(message)

    @property
    def cut(self) -> bool:
        """A response under way that the drain ends (rather than leave to the grace's end)."""
        return self.started and not self.finished and self.ending is not None

    async def end(self) -> None:
        """Send the ending of a response the drain cut, from the request's own task: the server
        completes the response when that task returns, and the line waits its turn behind what
        a slow reader has not taken yet."""
        assert self.ending is not None
        body: HTTPResponseBodyEvent = {"type": "http.response.body", "body": self.ending,
                                       "more_body": False}
        await self.send(body)

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
        try:
            await self.send(start)
            await self.send(body)
        finally:
            if self.replied is not None:
                self.replied.set()
        if self.task is not None and not self.ended:
            self.task.cancel()


class Drain:
    """The ASGI app wrapped: ``expire()`` answers 503 to every request that has not started
    its response (and to any that arrives later), ends the streams under way with their error
    line, and abandons their handlers."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.expired = False
        self.answered = 0
        self.ended = 0
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
            await self._answer(call, scope, receive)
            call.ended = True
            if call.answered and call.cut:
                await call.end()
            elif call.replied is not None:
                # a handler that ended as the grace did: its task waits for the drain's 503,
                # as the server would answer 500 for a task ended with no response started
                await call.replied.wait()
        finally:
            del self._in_flight[key]
            if call.task is not None:  # counted by now; the task may run another request
                _UNAVAILABLE.discard(call.task)

    async def _answer(self, call: _InFlight, scope: Scope, receive: Receive) -> None:
        """Run the app for ``call``; a handler the drain abandoned just stops."""
        try:
            with abandonable(lambda: call.answered):
                await self.app(scope, receive, call.forward)
        except asyncio.CancelledError:
            if not call.answered:
                raise

    async def expire(self) -> int:
        """Answer 503 to the requests whose response has not started, and end the streams under
        way (their handlers are cancelled, each task then sends its error line); return how
        many were answered 503."""
        self.expired = True
        calls = [c for c in self._in_flight.values() if not c.answered]
        late = [c for c in calls if not c.started]
        cut = [c for c in calls if c.cut]
        for call in late:
            call.answer_unavailable()
        for call in cut:
            call.answered = True
        for call in cut:
            if call.task is not None:
                call.task.cancel()
        self.answered += len(late)
        self.ended += len(cut)
        log.info("shutdown: grace over", extra={
            "step": "grace over", "answered_unavailable": len(late), "streams_ended": len(cut)})
        await asyncio.gather(*(c.unavailable() for c in late), return_exceptions=True)
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
            "answered_unavailable": self.drain.answered, "streams_ended": self.drain.ended,
            "seconds": round(time.monotonic() - started, 3)})
