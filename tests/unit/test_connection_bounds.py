"""The bounded HTTP connection protocol (src/http/connections.py) driven byte by byte over a
transport held in memory: what it writes for what arrives, and in which chunks it arrives (the
kernel decides those)."""

from __future__ import annotations

import asyncio
from typing import Any

import uvicorn
from uvicorn.server import ServerState

from context_service.http import connections


class Transport(asyncio.Transport):
    """What the protocol wrote, and whether it closed the connection."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 50000)}.get(
            name, default)


async def ok(scope: Any, receive: Any, send: Any) -> None:
    """Reads the whole body, then answers ``200 ok``."""
    while (await receive()).get("more_body", False):
        pass
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


def slow_until(release: asyncio.Event) -> Any:
    """An app answering ``200 ok``; ``/slow`` only once ``release`` is set."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/slow":
            await release.wait()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    return app


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def connected() -> tuple[connections.BoundedHttp, Transport]:
    config = uvicorn.Config(ok, lifespan="off", log_config=None)
    protocol = connections.bounded(100)(config, ServerState(), {},
                                        _loop=asyncio.get_running_loop())
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport


BODY = 200 * 1024  # a body larger than the head bound (an upload, a large query)
POST = b"POST /v1/upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % BODY
NEXT = b"GET /healthz HTTP/1.1\r\nHost: x\r\n"


def test_a_body_read_with_the_start_of_the_next_head_is_not_counted_as_head() -> None:
    """A request's body, then the next request on the kept-alive connection: the kernel may hand
    the body's last bytes and the next head's first ones over in one read. Only the head's bytes
    count towards ``MAX_HEAD``: the next request is answered, not refused ``request head too
    large`` (nor is that answer written into the connection among the first one's)."""

    async def exchange() -> bytes:
        protocol, transport = await connected()
        protocol.data_received(POST + b"a" * 1024)
        protocol.data_received(b"a" * (BODY - 1024) + NEXT)  # one read: body tail, next head
        await settle()
        protocol.data_received(b"Connection: close\r\n\r\n")
        await settle()
        protocol.connection_lost(None)
        return bytes(transport.written)

    written = asyncio.run(exchange())
    assert connections.HEAD_TOO_LARGE.encode() not in written
    assert written.count(b"HTTP/1.1 200 OK") == 2


def test_a_head_without_end_after_a_body_is_still_refused() -> None:
    """The other side of the bound: past the body, a next head that never ends is refused once
    its own bytes pass ``MAX_HEAD``."""

    async def exchange() -> bytes:
        protocol, transport = await connected()
        protocol.data_received(POST + b"a" * BODY + NEXT)
        await settle()
        line = b"X-Filler: " + b"a" * 1000 + b"\r\n"
        for _ in range(2 * connections.MAX_HEAD // len(line)):
            if transport.closed:
                break
            protocol.data_received(line)
        await settle()
        return bytes(transport.written)

    written = asyncio.run(exchange())
    assert written.startswith(b"HTTP/1.1 200 OK")
    assert connections.HEAD_TOO_LARGE.encode() in written


def test_the_probes_are_answered_when_every_connection_runs_a_request() -> None:
    """At the bound, with every connection running a request (a burst of reads waiting for
    their views, each of them under way): the kubelet's ``/healthz`` probe on a new connection
    is answered 200 as docs/operations.md promises (it runs on the event loop), not 503, or
    three missed probes restart a Pod that is only busy. Another request is still answered 503
    in the documented body."""
    release = asyncio.Event()
    app = slow_until(release)

    async def exchange() -> tuple[bytes, bytes]:
        config = uvicorn.Config(app, lifespan="off", log_config=None)
        state, loop = ServerState(), asyncio.get_running_loop()
        protocol = connections.bounded(1)
        busy = protocol(config, state, {}, _loop=loop)
        busy.connection_made(Transport())
        busy.data_received(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        await settle()
        probe, other = protocol(config, state, {}, _loop=loop), protocol(config, state, {},
                                                                           _loop=loop)
        probe_transport, other_transport = Transport(), Transport()
        probe.connection_made(probe_transport)
        probe.data_received(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        other.connection_made(other_transport)
        other.data_received(b"GET /v1/contexts HTTP/1.1\r\nHost: x\r\n\r\n")
        await settle()
        release.set()
        await settle()
        return bytes(probe_transport.written), bytes(other_transport.written)

    probe, other = asyncio.run(exchange())
    assert probe.startswith(b"HTTP/1.1 200 ")
    assert other.startswith(b"HTTP/1.1 503 ") and connections.BUSY.encode() in other


def test_a_head_over_the_bound_that_arrives_in_one_read_is_refused() -> None:
    """docs/operations.md: a head over 64 KiB is answered ``400 request head too large``. A
    client that writes its 100 KiB head at once hands it over in one read (the event loop reads
    up to 256 KiB): it is refused like one that arrives in pieces, not served."""

    async def exchange() -> bytes:
        protocol, transport = await connected()
        filler = b"X-Filler: " + b"a" * (100 * 1024) + b"\r\n"
        protocol.data_received(b"GET /api/agent/v1/packs HTTP/1.1\r\nHost: x\r\n" + filler
                               + b"\r\n")
        await settle()
        return bytes(transport.written)

    written = asyncio.run(exchange())
    assert written.startswith(b"HTTP/1.1 400 ")
    assert b'{"code":"INVALID_REQUEST","message":"request head too large"}' in written


def test_past_the_bound_each_new_connection_closes_the_oldest_waiting_in_constant_time(
        monkeypatch: Any) -> None:
    """At the bound, each new connection closes the one that has waited longest for a head.
    Found by looking at every open connection (up to 10,000) for each new one, a flood of new
    connections at the bound cost the event loop a scan of them all per connection; now the
    connections waiting are kept in the order they began to wait, and the oldest is the first
    of them. Also: one running a request is never closed for room, and one whose answer is
    complete waits again from then (it is closed after those waiting longer)."""
    looked = 0
    idle = connections.BoundedHttp.idle

    def counted(self: connections.BoundedHttp) -> bool:
        nonlocal looked
        looked += 1
        return idle.fget(self)  # type: ignore[attr-defined,no-any-return]

    monkeypatch.setattr(connections.BoundedHttp, "idle", property(counted))
    release = asyncio.Event()
    app = slow_until(release)

    async def flood() -> tuple[list[Transport], list[Transport], int]:
        nonlocal looked
        config = uvicorn.Config(app, lifespan="off", log_config=None)
        state, loop = ServerState(), asyncio.get_running_loop()
        protocol = connections.bounded(1000)
        opened: list[Transport] = []

        def connect() -> connections.BoundedHttp:
            made, transport = protocol(config, state, {}, _loop=loop), Transport()
            made.connection_made(transport)
            opened.append(transport)
            return made

        busy = connect()  # the oldest, running a request: never closed for room
        busy.data_received(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        answered = connect()  # answered once, so waiting again from then: after the others
        answered.data_received(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in range(998):
            connect()
        await settle()
        answered_at = len(opened)
        answered.data_received(b"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
        await settle()
        looked = 0
        for _ in range(2000):
            connect()
        release.set()
        await settle()
        return opened, [opened[1]], answered_at

    opened, answered, answered_at = asyncio.run(flood())
    assert not opened[0].closed  # running a request
    # the 998 that waited from the start went first, then the one answered again, then the
    # first 1,001 of the flood; the last 999 of the flood remain
    assert all(t.closed for t in opened[2:answered_at])
    assert answered[0].closed
    assert [t.closed for t in opened[answered_at:]] == [True] * 1001 + [False] * 999
    assert looked <= 3 * 2000  # a few connections looked at per new one, not all of them


class Buffered(Transport):
    """A transport whose buffer the test empties, as a client taking the answer would."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.aborted = False

    def get_write_buffer_size(self) -> int:
        return self.size

    def abort(self) -> None:
        self.aborted = self.closed = True


WINDOW = 30.0  # the bound on a write (its checks are run by the tests)
RATE = 100  # bytes a second to take: 3,000 in each window


async def paused(size: int) -> tuple[connections.BoundedHttp, Buffered]:
    """A connection with ``size`` bytes of answer waiting for its client."""
    config = uvicorn.Config(ok, lifespan="off", log_config=None)
    protocol = connections.bounded(100, write_seconds=WINDOW, min_rate=RATE)(
        config, ServerState(), {}, _loop=asyncio.get_running_loop())
    transport = Buffered(size)
    protocol.connection_made(transport)
    protocol.pause_writing()
    return protocol, transport


def windows_until_cut(taken: list[int], size: int = 100_000) -> int | None:
    """In which window the connection was cut, its client taking ``taken[i]`` bytes in window
    ``i`` (None: it never was). Each window's check is run at once rather than waited for."""

    async def run() -> int | None:
        protocol, transport = await paused(size)
        for window, took in enumerate(taken):
            assert protocol.write_timer is not None  # the check of this window is due
            protocol.write_timer.cancel()
            waiting = transport.size
            transport.size -= took
            protocol._write_late(waiting)
            if transport.aborted:
                return window
        protocol.connection_lost(None)
        return None

    return asyncio.run(run())


def test_a_client_must_take_the_rate_in_every_window() -> None:
    """A client taking a trickle of its answer made progress, so it held the connection, the
    answer and its request as long as it liked (a slow-read attack). It must now take
    ``min_rate`` bytes a second, counted in each ``write_seconds``: the rate or more keeps the
    connection, a byte less in any window ends it, as does nothing."""
    assert windows_until_cut([3_000, 5_000, 3_000]) is None
    assert windows_until_cut([3_000, 2_999]) == 1
    assert windows_until_cut([1]) == 0
    assert windows_until_cut([0]) == 0


def test_less_waiting_than_a_windows_rate_must_all_be_taken() -> None:
    """What is left may be less than a window's worth: then all of it must go (a client that
    takes the last bytes slowly holds the connection no longer than one that takes the rate)."""
    assert windows_until_cut([600], size=600) is None
    assert windows_until_cut([599], size=600) == 0
