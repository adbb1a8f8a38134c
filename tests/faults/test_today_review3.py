"""An answer its client never reads, on a connection the server is already closing: after an
answer to ``Connection: close``, or once the keep-alive timeout closed an idle connection whose
answer still waits in its buffer, a close waits to send the buffer first, so only the write
bound ends it (src/http/connections.py).

Each wait has a bound only so that a server that never acts fails the test instead of hanging
it; no test measures how long anything took.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import uvicorn

from context_service.http import connections
from tests.e2e.server import free_port
from tests.support.inprocess_server import all_closed, serving

pytestmark = pytest.mark.slow  # seconds of waiting for clients that do not read

BIG = 16 * 1024 * 1024  # an answer far larger than the buffers on the way (4 MiB the kernel)
GIVE_UP = 20.0


class Big:
    """An app answering every path with ``BIG`` bytes in one message; ``answered`` once it
    wrote them (into the connection's buffer)."""

    def __init__(self) -> None:
        self.answered = threading.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(BIG).encode())]})
        await send({"type": "http.response.body", "body": b"b" * BIG})
        self.answered.set()


Serve = Callable[..., tuple[uvicorn.Server, Big]]


@pytest.fixture
def serve() -> Iterator[Serve]:
    """Start uvicorn with the bounded protocol and ``big`` for every path, with these
    settings; each one started is stopped after the test."""
    with contextlib.ExitStack() as running:

        def start(port: int, write_seconds: float,
                  keep_alive: float) -> tuple[uvicorn.Server, Big]:
            app = Big()
            config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None,
                                    lifespan="off",
                                    timeout_keep_alive=keep_alive,  # type: ignore[arg-type]
                                    http=connections.bounded(100, write_seconds=write_seconds))
            server, _ = running.enter_context(serving(config))
            return server, app

        yield start


def unread(port: int, head: bytes, buffer: int = 4096) -> socket.socket:
    """A client that sends ``head`` and reads nothing (the kernel holds ``buffer`` for it)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, buffer)
    sock.settimeout(GIVE_UP)
    sock.connect(("127.0.0.1", port))
    sock.sendall(head)
    return sock


def test_an_unread_answer_to_connection_close_is_dropped(serve: Serve) -> None:
    """uvicorn closes the connection right after such an answer, and a close waits to send the
    buffer: the write bound saw a connection closing and let it be, so the client held it and
    the whole answer for ever."""
    port = free_port()
    server, app = serve(port, write_seconds=1.0, keep_alive=5)
    with unread(port, b"GET /export HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"):
        assert app.answered.wait(GIVE_UP)
        assert all_closed(server, GIVE_UP), "the connection still holds the answer"


def test_an_unread_answer_outlasting_the_keep_alive_timeout_is_dropped(serve: Serve) -> None:
    """The service's keep-alive timeout (5 s) is shorter than its write bound (30 s): the
    idle connection was closed, as above, before the bound was reached."""
    port = free_port()
    server, app = serve(port, write_seconds=2.0, keep_alive=0.5)
    with unread(port, b"GET /export HTTP/1.1\r\nHost: x\r\n\r\n"):
        assert app.answered.wait(GIVE_UP)
        assert all_closed(server, GIVE_UP), "the connection still holds the answer"


def test_a_client_reading_steadily_gets_a_whole_answer_to_connection_close(
        serve: Serve) -> None:
    """The bound holds on a closing connection too, and only on one that makes no progress:
    this client reads 256 KiB at a time, a twentieth of a second apart (about three times the
    bound for the answer), and gets all of it."""
    port = free_port()
    server, _ = serve(port, write_seconds=1.0, keep_alive=5)
    head = b"GET /export HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    with unread(port, head, buffer=256 * 1024) as sock:
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        body = len(data.partition(b"\r\n\r\n")[2])
        while body < BIG and (chunk := sock.recv(256 * 1024)):
            body += len(chunk)
            time.sleep(0.05)
        assert body == BIG
    assert all_closed(server, GIVE_UP)
