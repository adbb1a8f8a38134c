"""Bounds on the connections the HTTP server holds, below the ASGI app: uvicorn's HTTP protocol
(httptools) has none of them, so a client that opens connections and sends nothing, or part of
a request head and then nothing, held a descriptor for ever, and a head of endless header lines
was kept whole in memory.

- The request head (request line and headers) must arrive within ``HEAD_SECONDS`` (the API's
  header timeout, context-service-api.md §1.1.1), counted from the connection's start or from
  the first byte of a next request; past it the connection is closed. An idle keep-alive
  connection is closed by uvicorn's own ``timeout_keep_alive``.
- A head larger than ``MAX_HEAD`` bytes is answered ``400 request head too large`` in the body
  style of its path's family and the connection closed: no more of it is kept.
- At most ``max_connections`` are open at once, so a flood cannot take the descriptors the
  database, NATS and the index files need. A connection past the bound makes room by closing
  the one that has waited longest for a head; when every open connection is running a request,
  the new one's request is answered ``503`` and the connection closed, unless it is a probe
  (``/healthz``, ``/readyz``): those are answered on up to ``PROBE_ROOM`` connections past the
  bound, or a Pod that is only busy fails its liveness probe and is restarted.
- An answer its client takes less than ``MIN_RATE`` bytes a second of, over any
  ``WRITE_SECONDS`` (the bytes waiting for it do not go down by that much), ends the
  connection, its buffer dropped: uvicorn has no write timeout, and a client that never reads,
  or reads a trickle, held its request, its connection and its whole answer in memory until
  shutdown. A client that reads slowly but steadily gets all of it.
- When a connection is lost, its requests whose answer is not complete are cancelled: uvicorn
  only marks them disconnected and lets them run, so a job still waiting in the handlers' thread
  pool ran for nobody, ahead of every other caller's (a client that sends requests and closes
  each connection at once is held by no bound). Cancelled, a job not started yet is dropped; one
  already running finishes in its thread and its answer goes nowhere. Work after a complete
  answer (a background task) is left to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import resource
import sys
import termios
import weakref
from collections import OrderedDict
from typing import Any

import msgspec
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

log = logging.getLogger(__name__)

HEAD_SECONDS = 5.0
# the socket's unsent bytes (Linux's SIOCOUTQ, which is TIOCOUTQ); None elsewhere
_OUTQ: int | None = getattr(termios, "TIOCOUTQ", None) if sys.platform == "linux" else None
WRITE_SECONDS = 30.0  # an answer waiting this long with none of it taken ends its connection
# bytes a second a client must take of an answer waiting for it, counted over each WRITE_SECONDS
# (as Kestrel's MinResponseDataRate, 240 bytes a second)
MIN_RATE = 240
MAX_HEAD = 64 * 1024  # bytes of request line and headers; h11's default is 16 KiB
# open connections at most (and at most half the files the process may open)
MAX_CONNECTIONS = 10_000
HEAD_TOO_LARGE = "request head too large"
MALFORMED = "malformed HTTP request"
BUSY = "the service has too many open connections; retry shortly"
PROBES = (b"/healthz", b"/readyz")  # answered past the bound: the kubelet's, on the event loop
PROBE_ROOM = 64  # connections past the bound, for probes (each is answered and closed at once)
_enc = msgspec.json.Encoder()
# request tasks cancelled because their client went, each with how many cancellations it had
# been asked before (a task handles those on its own, as the drain does for a stream it cuts)
_ABANDONED: weakref.WeakKeyDictionary[asyncio.Task[Any], int] = weakref.WeakKeyDictionary()


# each server's connections (by its state) in the order they last began to wait for a head: the
# first one still waiting is the one that has waited longest. One that runs a request meanwhile
# is dropped when reached, and comes back at the end when its answer is complete.
_WAITING: weakref.WeakKeyDictionary[ServerState, OrderedDict[BoundedHttp, None]] = (
    weakref.WeakKeyDictionary())


def abandoned_by_client(task: asyncio.Task[Any] | None) -> bool:
    """Whether ``task`` (a request's) was cancelled because its client closed the connection
    before the answer: no other cancellation of it (the drain's, the server's at shutdown)."""
    return task is not None and task in _ABANDONED


def connection_bound() -> int:
    """The bound on open connections for this process: half the files it may open at most, the
    rest kept for everything else it opens."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(1, min(MAX_CONNECTIONS, soft // 2))


def answer(status: int, code: str, message: str, api: bool) -> bytes:
    """A whole response that closes the connection, in the body style of the path's family."""
    reason = {400: b"Bad Request", 503: b"Service Unavailable"}[status]
    body, headers = _refused(code, message, api)
    head = b"".join(b"%s: %s\r\n" % header for header in headers)
    return b"HTTP/1.1 %d %s\r\n%s\r\n%s" % (status, reason, head, body)


def _refused(code: str, message: str, api: bool) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """The body and headers of a refusal, in the body style of the path's family (``/api/``:
    the agent API's, never stored)."""
    body = _enc.encode({"code": code.upper(), "message": message} if api
                       else {"error": code, "message": message})
    headers = [(b"content-type", b"application/json"),
               (b"content-length", b"%d" % len(body)), (b"connection", b"close")]
    if api:
        headers.append((b"cache-control", b"no-store"))
    return body, headers


def refusal(status: int, code: str, message: str) -> Any:
    """An app in place of the service's for a head read whole: it answers ``answer``'s response
    (the connection is closed after it)."""

    async def refuse(scope: Any, receive: Any, send: Any) -> None:
        body, headers = _refused(code, message, scope["path"].startswith("/api/"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return refuse


class BoundedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with a head deadline, a head size bound and a bound on open
    connections (set on a subclass by ``bounded``), whose requests are cancelled when their
    client goes before the answer."""

    head_seconds = HEAD_SECONDS
    write_seconds = WRITE_SECONDS
    min_rate = MIN_RATE
    max_head = MAX_HEAD
    max_connections = MAX_CONNECTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url = b""
        self.head_timer: asyncio.TimerHandle | None = None
        self.write_timer: asyncio.TimerHandle | None = None  # while writing is paused
        self.head_bytes = 0  # of the head being read, as far as it came
        self.heads = 0  # heads read whole on this connection
        self.reading: bool = True
        self.past_bound = False  # opened when every connection ran a request: probes only
        self.lost = False
        # this connection's request tasks (uvicorn's ``self.tasks`` is the server's, shared by
        # every connection), each with its cycle
        self.answering: dict[asyncio.Task[Any], RequestResponseCycle] = {}

    # the connection's life

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        room = len(self.connections) < self.max_connections or self._make_room()
        super().connection_made(transport)
        self._waiting()
        self.past_bound = not room
        if self.past_bound and len(self.connections) > self.max_connections + PROBE_ROOM:
            self._refuse(503, "unavailable", BUSY)
            return
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        self._disarm_write_timer()
        super().connection_lost(exc)
        self.lost = True
        self._abandon()
        self._in_line().pop(self, None)

    def _in_line(self) -> OrderedDict[BoundedHttp, None]:
        """This server's connections in the order they began to wait (``_WAITING``)."""
        line = _WAITING.get(self.server_state)
        if line is None:
            line = _WAITING[self.server_state] = OrderedDict()
        return line

    def _waiting(self) -> None:
        """This connection waits for a head from now: last in line."""
        line = self._in_line()
        line[self] = None
        line.move_to_end(self)

    def _make_room(self) -> bool:
        """Close the connection that has waited longest for a head; False when none waits.
        The first in line that still waits (each passed over leaves the line), so a flood of
        new connections at the bound costs a few steps each, not a look at every one open."""
        line = self._in_line()
        while line:
            oldest, _ = line.popitem(last=False)
            if (oldest.idle and not oldest.transport.is_closing()
                    and oldest in self.connections):
                oldest.transport.close()
                self.connections.discard(oldest)  # out of the count now, not on the next turn
                return True
        return False

    @property
    def idle(self) -> bool:
        """Waiting for a head (or for the first byte of one): no request of it runs."""
        return self.cycle is None or (self.cycle.response_complete and not self.pipeline)

    # requests whose client is gone

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        # uvicorn's: makes the task that runs ``app`` for ``cycle`` (a head read whole, or the
        # next pipelined one) and adds it to the server's tasks; the wrapper notes it as ours
        super()._start_asgi_task(cycle, self._abandonable(cycle, app))

    def _abandonable(self, cycle: RequestResponseCycle, app: Any) -> Any:
        """``app`` for ``cycle``, in a task ``_abandon`` may cancel: that cancellation ends it
        quietly (uvicorn's ``run_asgi`` would log any exception as the app's failure)."""

        async def run(scope: Any, receive: Any, send: Any) -> None:
            if self.lost:  # gone before the task's first step
                cycle.disconnected = True
                return
            task = asyncio.current_task()
            assert task is not None
            self.answering[task] = cycle
            try:
                await app(scope, receive, send)
            except asyncio.CancelledError:
                # another's cancel since ours (the server's, at shutdown) goes on as it did
                if task not in _ABANDONED or task.uncancel() > _ABANDONED[task]:
                    raise
                log.debug("request abandoned: its client closed the connection before the "
                          "answer", extra={"path": scope.get("path")})
            finally:
                del self.answering[task]
                _ABANDONED.pop(task, None)

        return run

    def _abandon(self) -> None:
        """Cancel this connection's requests whose answer is not complete. Each cycle is marked
        disconnected (uvicorn marks only the last one read), so that ``run_asgi`` takes the
        app's quiet end for a client gone, not for an app that never answered."""
        for task, cycle in self.answering.items():
            if not cycle.response_complete and task not in _ABANDONED:
                cycle.disconnected = True
                _ABANDONED[task] = task.cancelling()
                task.cancel()

    # the head

    def data_received(self, data: bytes) -> None:
        if self.idle:
            self._arm_head_timer()  # what arrives starts a head (or is one's leading junk)
        before = self.heads
        begun = self.reading  # a head was being read when this chunk came (none of it body)
        super().data_received(data)
        if self.transport.is_closing() or not self.reading:
            return
        if self.heads == before and begun:  # the whole chunk was head, still not complete
            self.head_bytes += len(data)
        if self.head_bytes > self.max_head:
            self._refuse(400, "invalid_request", HEAD_TOO_LARGE)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.reading = True
        self.head_bytes = 0
        self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self.reading = False
        self.heads += 1
        self._disarm_head_timer()
        # uvicorn runs ``self.app`` for the head just read
        if self._head_size() > self.max_head:  # the read that ended it was not counted
            self.app = refusal(400, "invalid_request", HEAD_TOO_LARGE)
        elif self.past_bound and self.url.split(b"?", 1)[0] not in PROBES:
            self.app = refusal(503, "unavailable", BUSY)
        super().on_headers_complete()

    def _head_size(self) -> int:
        """The bytes of the head just read, short of its method, version and separators."""
        return len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._waiting()  # from its last response (or its start)

    def send_400_response(self, msg: str) -> None:
        """A malformed request, in the documented error body rather than uvicorn's text."""
        self._refuse(400, "invalid_request", MALFORMED)

    def _arm_head_timer(self) -> None:
        if self.head_timer is None:
            self.head_timer = self.loop.call_later(self.head_seconds, self._head_late)

    def _disarm_head_timer(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_late(self) -> None:
        """No whole head within the deadline: the connection goes (after the answer under way,
        when a pipelined head is the late one)."""
        self.head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.keep_alive = False
            return
        if not self.transport.is_closing():
            self.transport.close()

    # an answer its client does not take

    def pause_writing(self) -> None:
        """The connection's buffer is over its high-water mark: the client has not taken what
        was written so far. From now on it must take ``min_rate`` bytes a second of it, in
        every ``write_seconds``."""
        super().pause_writing()
        if self.write_timer is None:
            self._arm_write_timer(self._unsent())

    def resume_writing(self) -> None:
        super().resume_writing()
        self._disarm_write_timer()

    def _unsent(self) -> int:
        """The bytes of answers written and not yet taken by the client: those in the
        connection's buffer and, where the system says (Linux), those in the socket's send
        queue. The kernel takes from the buffer only once its queue has room for a good part of
        it (megabytes, on a fast link), so the buffer alone can stand still for seconds while
        a client reads steadily."""
        unsent = self.transport.get_write_buffer_size()
        sock = self.transport.get_extra_info("socket")
        if sock is not None and _OUTQ is not None:
            with contextlib.suppress(OSError, ValueError):
                unsent += int.from_bytes(fcntl.ioctl(sock.fileno(), _OUTQ, bytes(4)),
                                         sys.byteorder, signed=True)
        return unsent

    def _arm_write_timer(self, waiting: int) -> None:
        self.write_timer = self.loop.call_later(self.write_seconds, self._write_late, waiting)

    def _disarm_write_timer(self) -> None:
        if self.write_timer is not None:
            self.write_timer.cancel()
            self.write_timer = None

    def _write_late(self, waiting: int) -> None:
        """``waiting`` bytes were unsent ``write_seconds`` ago: ``min_rate`` bytes a second
        fewer now (or none left) is progress enough (a large answer is written whole, so the
        buffer stays over its mark while a slow client reads it); less, and the client took
        nothing or a trickle meanwhile (a slow-read attack holds a connection with a few bytes
        a window): the connection is aborted, its buffer dropped (a close would wait to send
        it), and its request ends. A connection
        already closing is no exception: uvicorn closes it after an answer to ``Connection:
        close`` and once its keep-alive timeout (5 s) passed, and the close waits for the
        client to take the buffer."""
        self.write_timer = None
        if self.lost:
            return
        left = self._unsent()
        if waiting - left >= min(waiting, self.min_rate * self.write_seconds):
            self._arm_write_timer(left)
            return
        log.info("connection closed: its client took too little of the answer",
                 extra={"path": self.url.split(b"?", 1)[0].decode("latin-1"),
                        "seconds": self.write_seconds, "waiting_bytes": left,
                        "taken_bytes": max(0, waiting - left)})
        self.transport.abort()

    def _refuse(self, status: int, code: str, message: str) -> None:
        self._disarm_head_timer()
        if not self.transport.is_closing():
            self.transport.write(answer(status, code, message, self.url.startswith(b"/api/")))
            self.transport.close()


def bounded(max_connections: int, head_seconds: float = HEAD_SECONDS,
            max_head: int = MAX_HEAD, write_seconds: float = WRITE_SECONDS,
            min_rate: int = MIN_RATE) -> type[BoundedHttp]:
    """The protocol class for uvicorn's ``http`` setting, with these bounds."""
    return type("BoundedHttp", (BoundedHttp,), {
        "max_connections": max_connections, "head_seconds": head_seconds,
        "max_head": max_head, "write_seconds": write_seconds, "min_rate": min_rate})
