"""Clients that do not read their answer, against uvicorn with the bounded protocol in this
process (src/http/connections.py): a response is written into the connection's buffer whole,
and its request waits for the client to take it. A client that never reads held the request,
its connection and the whole answer in memory until shutdown; one that reads slowly but
steadily must still get all of it.

Each wait has a bound only so that a server that never acts fails the test instead of hanging
it; no test measures how long anything took.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from context_service.http import connections
from tests.e2e.server import free_port
from tests.support.inprocess_server import all_closed, serving

pytestmark = pytest.mark.slow  # seconds of waiting for clients that do not read

BIG = 4 * 1024 * 1024  # an answer far larger than the buffers on the way (a large export)
WRITE_SECONDS = 1.0  # the bound on a write that makes no progress, for these tests
MIN_RATE = 192 * 1024  # bytes a second a client must take of a waiting answer, for these tests
GIVE_UP = 20.0


class Served:
    def __init__(self) -> None:
        self.port = free_port()
        self.ended: dict[str, threading.Event] = {}
        self.server: uvicorn.Server | None = None

    def all_closed(self) -> bool:
        assert self.server is not None
        return all_closed(self.server, GIVE_UP)

    def ending(self, path: str) -> threading.Event:
        return self.ended.setdefault(path, threading.Event())


@pytest.fixture
def served() -> Iterator[Served]:
    """An app answering ``/big`` with ``BIG`` bytes in one message and ``/stream`` with them in
    64 KiB chunks; each request's end (answered, failed or cancelled) is noted."""
    state = Served()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        ended = state.ending(scope["path"])
        try:
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", str(BIG).encode())]})
            if scope["path"] == "/stream":
                for _ in range(BIG // 65536):
                    await send({"type": "http.response.body", "body": b"s" * 65536,
                                "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            else:
                await send({"type": "http.response.body", "body": b"b" * BIG})
        finally:
            ended.set()

    config = uvicorn.Config(app, host="127.0.0.1", port=state.port, log_config=None,
                            lifespan="off",
                            http=connections.bounded(100, write_seconds=WRITE_SECONDS,
                                                     min_rate=MIN_RATE))
    with serving(config) as (state.server, _):
        yield state


def request(port: int, path: str, buffer: int = 4096) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer)  # what the kernel holds
    sock.settimeout(GIVE_UP)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path.encode())
    return sock


@pytest.mark.parametrize("path", ["/big", "/stream"])
def test_an_answer_its_client_never_reads_is_dropped_and_its_request_ends(
        served: Served, path: str) -> None:
    """Before, the connection waited for the client for ever, holding the answer's bytes (and,
    for a streamed answer, its request) until shutdown: a few thousand such clients held
    gigabytes."""
    with request(served.port, path) as sock:
        assert served.ending(path).wait(GIVE_UP), "the request still waits for its client"
        assert served.all_closed(), "the connection still holds the answer"
        received = 0
        try:
            while chunk := sock.recv(65536):
                received += len(chunk)
        except ConnectionResetError:
            pass
        assert received < BIG  # cut off: what the kernel's buffers held, not the answer


@pytest.mark.parametrize("path", ["/big", "/stream"])
def test_a_client_reading_slowly_but_steadily_gets_the_whole_answer(
        served: Served, path: str) -> None:
    """The bound is on a write that makes too little progress (``MIN_RATE``), not on the whole
    answer: this client reads 64 KiB at a time, a twentieth of a second apart (over 3 s for the
    answer, three times the bound; seven times the rate), and gets all of it."""
    with request(served.port, path, buffer=65536) as sock:
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        body = len(data.partition(b"\r\n\r\n")[2])
        while body < BIG and (chunk := sock.recv(65536)):
            body += len(chunk)
            time.sleep(0.05)
        assert body == BIG
    assert served.ending(path).wait(GIVE_UP)
