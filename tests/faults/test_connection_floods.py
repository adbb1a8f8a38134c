"""Connection floods and slow clients against the served process, over raw sockets: connections
that send part of a head (or nothing) and stop, heads without end, idle keep-alive connections
and pipelined requests; and the bound on open connections against uvicorn in this process.

Each wait for the server to act has a bound only so that a server that never acts fails the
test instead of hanging it; no test measures how long anything took.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import selectors
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from context_service.http import connections
from tests.e2e.server import ServerProcess, free_port
from tests.support.inprocess_server import serving
from tests.support.services import Databases, _with_db

HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
HEALTHZ = HEAD + b"\r\n"
HELD = 2000  # connections an attacker holds open at once
GIVE_UP = 3 * connections.HEAD_SECONDS  # seconds: a server that closes nothing fails here


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, pg_admin_url: str, pg_template: str,
           test_databases: Databases) -> Iterator[ServerProcess]:
    """One ``serve`` for the module (each test leaves it as it found it)."""
    proc = ServerProcess(tmp_path_factory.mktemp("floods"))
    proc.env["CS_DATABASE_URL"] = _with_db(pg_admin_url, test_databases.clone(pg_template))
    proc.start()
    yield proc
    proc.kill()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=GIVE_UP)


def response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of the one response ``sock`` gets (the server closes it)."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return int(status_line.split()[1]), headers, body


def closed_by_server(socks: list[socket.socket]) -> list[socket.socket]:
    """Wait until the server closed each of ``socks`` (or ``GIVE_UP`` passed); the ones still
    open."""
    open_ = set(socks)
    deadline = time.monotonic() + GIVE_UP
    with selectors.DefaultSelector() as selector:
        for sock in socks:
            selector.register(sock, selectors.EVENT_READ)
        while open_ and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.5):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                try:
                    ended = sock.recv(65536) == b""
                except ConnectionResetError:
                    ended = True
                if ended:
                    selector.unregister(sock)
                    open_.discard(sock)
    return [s for s in socks if s in open_]


def healthz(port: int) -> int:
    with connect(port) as sock:
        sock.sendall(HEALTHZ.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
        return response(sock)[0]


def test_connections_that_never_send_a_whole_head_are_closed(served: ServerProcess) -> None:
    held = []
    try:
        for n in range(HELD):
            sock = connect(served.port)
            if n % 2:  # half send part of a head, half nothing at all
                sock.sendall(HEAD)
            held.append(sock)
        kept_alive = connect(served.port)  # one request answered, then one byte of the next
        held.append(kept_alive)
        kept_alive.sendall(HEALTHZ)
        assert kept_alive.recv(65536).startswith(b"HTTP/1.1 200 ")
        kept_alive.sendall(b"G")

        dripping = connect(served.port)  # a head a byte at a time, never whole
        held.append(dripping)
        drip = threading.Thread(target=drip_until_closed, args=(dripping,), daemon=True)
        drip.start()

        assert healthz(served.port) == 200  # while all of them are open

        assert closed_by_server(held) == []
        assert healthz(served.port) == 200
    finally:
        for sock in held:
            sock.close()


def drip_until_closed(sock: socket.socket) -> None:
    """Send a head's bytes one at a time, a pause between them, until the socket fails."""
    for byte in (HEAD * 100)[:-1]:
        try:
            sock.send(bytes([byte]))
        except OSError:
            return
        time.sleep(0.05)


def send_until_answered(port: int, first: bytes, more: bytes, limit: int) -> socket.socket:
    """Send ``first``, then ``more`` again and again until the server answers or ``limit``
    bytes went; the socket, to read the answer from."""
    sock = connect(port)
    sock.sendall(first)
    sent = len(first)
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_READ)
        while sent < limit and not selector.select(timeout=0):
            try:
                sock.sendall(more)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(more)
    return sock


@pytest.mark.parametrize(("first", "more"), [
    (HEAD, b"X-Filler: " + b"a" * 1000 + b"\r\n"),  # header lines without end
    (HEAD, b"X: y\r\n"),  # many small headers
    (HEAD + b"X-Long: ", b"a" * 4096),  # one value without end
    (b"GET /healthz?q=", b"a" * 4096),  # a request line without end
], ids=["header-lines", "many-headers", "long-value", "long-request-line"])
def test_a_head_without_end_is_refused_in_the_documented_body(
        served: ServerProcess, first: bytes, more: bytes) -> None:
    with send_until_answered(served.port, first, more, limit=8 * 1024 * 1024) as sock:
        status, headers, body = response(sock)
    assert (status, headers["connection"]) == (400, "close")
    assert json.loads(body) == {"error": "invalid_request", "message": "request head too large"}


def test_an_agent_api_head_too_large_is_refused_in_the_agent_api_body(
        served: ServerProcess) -> None:
    first = b"GET /api/agent/v1/packs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    with send_until_answered(served.port, first, b"X: " + b"a" * 1000 + b"\r\n",
                             limit=8 * 1024 * 1024) as sock:
        status, headers, body = response(sock)
    assert (status, headers["cache-control"]) == (400, "no-store")
    assert json.loads(body) == {"code": "INVALID_REQUEST", "message": "request head too large"}


def test_a_malformed_request_is_answered_in_the_documented_body(served: ServerProcess) -> None:
    with connect(served.port) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost 127.0.0.1\r\n\r\n")  # no colon
        status, _, body = response(sock)
    assert status == 400
    assert json.loads(body) == {"error": "invalid_request", "message": "malformed HTTP request"}


def test_a_large_head_within_the_bound_and_pipelined_requests_are_answered(
        served: ServerProcess) -> None:
    large = HEAD + b"X-Large: " + b"a" * 60_000 + b"\r\n\r\n"
    with connect(served.port) as sock:
        sock.sendall(large + HEALTHZ * 3 + HEALTHZ.replace(b"\r\n\r\n",
                                                           b"\r\nConnection: close\r\n\r\n"))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.count(b"HTTP/1.1 200 OK") == 5


# the bound on open connections, against uvicorn in this process (a bound of 3)

BOUND = 3


@pytest.fixture
def bounded_server() -> Iterator[tuple[int, list[str]]]:
    """uvicorn with the bounded protocol over an app whose ``/slow`` never answers; the paths of
    the requests the app began."""
    release = asyncio.Event()
    began: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        began.append(scope["path"])
        if scope["path"] == "/slow":
            await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="off",
                            http=connections.bounded(BOUND))
    with serving(config) as (_, loop):
        yield port, began
        loop.call_soon_threadsafe(release.set)


def get(sock: socket.socket, path: str) -> None:
    sock.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path.encode())


def test_past_the_bound_a_connection_closes_the_one_waiting_longest_for_a_head(
        bounded_server: tuple[int, list[str]]) -> None:
    port, _ = bounded_server
    idle = [connect(port) for _ in range(BOUND)]
    idle[1].sendall(HEAD)  # part of a head: waiting as well
    try:
        with connect(port) as sock:
            get(sock, "/")
            assert response(sock)[0] == 200
        assert closed_by_server(idle[:1]) == []
    finally:
        for sock in idle:
            sock.close()


def test_when_every_connection_runs_a_request_a_new_one_is_answered_503(
        bounded_server: tuple[int, list[str]]) -> None:
    port, began = bounded_server
    busy = [connect(port) for _ in range(BOUND)]
    for sock in busy:
        get(sock, "/slow")
    deadline = time.monotonic() + GIVE_UP
    while len(began) < BOUND and time.monotonic() < deadline:  # each runs in the app
        time.sleep(0.01)
    try:
        with connect(port) as sock:
            get(sock, "/")
            status, headers, body = response(sock)
        assert (status, headers["connection"]) == (503, "close")
        assert json.loads(body)["error"] == "unavailable"
    finally:
        for sock in busy:
            sock.close()
