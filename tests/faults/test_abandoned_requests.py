"""Requests whose client closed the connection before their answer, against the served process
(real PostgreSQL): a client that sends requests and closes each connection at once is not held
by the bound on connections, so every job it left in the handlers' queue would run, for nobody,
ahead of every other caller's. Each is dropped instead: it never runs, and a request sent after
them is answered as soon as a handler thread is free.

Each wait for the server has a bound only so that a server that never acts fails the test
instead of hanging it; no test measures how long anything took.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator

import psycopg
import pytest

from tests.e2e.server import ServerProcess
from tests.support.event_table import mentions, waiting_for_the_lock

HANDLERS = 40  # the handlers' thread pool (``http.common``): every thread is held
ABANDONED = 400  # requests whose client is gone before their answer
BOUND = 60.0  # seconds: a server that never answers fails the test here
ADMIN = "service:context-service-admin"


def member_change(subject: str) -> bytes:
    """A request making ``subject`` an owner of the workspace (a write on a handler thread),
    on a connection it closes."""
    body = json.dumps({"subject": {"kind": "user", "name": subject}, "role": "owner"}).encode()
    return (b"PUT /v1/namespaces/e2e/members HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"X-Context-Subject: " + ADMIN.encode() + b"\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n"
            b"Connection: close\r\n\r\n%s" % (len(body), body))


def sent(port: int, request: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
    sock.sendall(request)
    return sock


def status(sock: socket.socket) -> int:
    """The status of the one answer ``sock`` gets (the server closes it after)."""
    data = b""
    with sock, contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 "), data[:200]
    return int(data.split(b" ", 2)[1])


def loop_turns(port: int, rounds: int = 3) -> None:
    """``/healthz`` (answered on the event loop) ``rounds`` times, one after the other: what the
    service received before is read by then, and each request read has started."""
    for _ in range(rounds):
        assert status(sent(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                 b"Connection: close\r\n\r\n")) == 200


@pytest.fixture
def appends_blocked(database_url: str) -> Iterator[psycopg.Connection[object]]:
    """A transaction that will hold the event table's append lock (the mode
    ``cs_append_events`` takes) once the test takes it: appends wait, reads do not."""
    with psycopg.connect(database_url) as blocker:
        yield blocker
        blocker.rollback()


@pytest.mark.e2e
def test_requests_abandoned_in_the_handlers_queue_never_run(
        serve: ServerProcess, database_url: str,
        appends_blocked: psycopg.Connection[object]) -> None:
    """Every handler thread waits in a write for the table lock the test holds; then a client
    sends ``ABANDONED`` writes, closing each connection at once, and a legit caller sends one.
    Once the lock goes, the legit write is answered with none of the abandoned ones in the log
    (they were dropped, not run ahead of it), none is ever written, and the service logs no
    error for them."""
    serve.env["CS_LOCK_WAIT_SECONDS"] = "300"  # the held writes wait for the test, not a bound
    serve.start()
    with serve.client() as http:
        assert http.put("/v1/namespaces/e2e/members", headers={"X-Context-Subject": ADMIN},
                        json={"subject": {"kind": "user", "name": "alice"},
                              "role": "owner"}).status_code == 200
    appends_blocked.execute("LOCK TABLE stored_events IN EXCLUSIVE MODE")

    with contextlib.ExitStack() as opened:  # a failing test leaves no socket open
        holders = [opened.enter_context(sent(serve.port, member_change(f"holder-{n}")))
                   for n in range(HANDLERS)]
        gives_up = time.monotonic() + BOUND
        while not waiting_for_the_lock(database_url):
            assert time.monotonic() < gives_up, "no write waits for the lock"
            time.sleep(0.02)
        loop_turns(serve.port)  # each holder's job is in the handlers' queue, ahead of the rest

        for n in range(ABANDONED):
            sent(serve.port, member_change(f"gone-{n}")).close()
        loop_turns(serve.port)  # each abandoned connection's end is read
        legit = opened.enter_context(sent(serve.port, member_change("legit")))
        loop_turns(serve.port)

        appends_blocked.rollback()  # the lock goes: the held writes commit, threads are free
        assert status(legit) == 200
        assert mentions(database_url, "gone-") == 0  # none ran ahead of the legit write
        assert [status(sock) for sock in holders] == [200] * HANDLERS

    with serve.client() as http:  # through the handlers' queue, behind anything still in it
        scraped = http.get("/metrics")
    assert scraped.status_code == 200
    # the abandoned requests are the clients' doing (499), no failure of the service's
    assert 'status="5' not in scraped.text and f'status="499"}} {ABANDONED:.1f}' in scraped.text
    assert (mentions(database_url, "holder-"), mentions(database_url, "legit"),
            mentions(database_url, "gone-")) == (HANDLERS, 1, 0)
    assert "Exception in ASGI application" not in serve.log_text()
