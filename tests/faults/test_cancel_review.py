"""Requests that must not be taken for abandoned, and one that is, against the served process
(real PostgreSQL): writes pipelined on one keep-alive connection, the last asking to close it,
are each answered and written (one answered whole ends nothing of the next); a client that
half-closes its connection after sending a write (``shutdown(SHUT_WR)``) is taken for gone, as
the server cannot tell that end from a whole close, and that is no failure of the service's.

Each wait for the server has a bound only so that a server that never acts fails the test
instead of hanging it; no test measures how long anything took.
"""

from __future__ import annotations

import contextlib
import socket

import pytest

from tests.e2e.server import ServerProcess
from tests.faults.test_abandoned_requests import (
    ADMIN,
    BOUND,
    loop_turns,
    member_change,
    mentions,
)


def kept_open(subject: str) -> bytes:
    """``member_change`` on a connection kept open for the next request."""
    return member_change(subject).replace(b"Connection: close\r\n", b"")


def answers(sock: socket.socket) -> list[int]:
    """The statuses of every answer ``sock`` gets until the server closes it."""
    data = b""
    with sock, contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(65536):
            data += chunk
    return [int(part.split(b" ", 1)[0]) for part in data.split(b"HTTP/1.1 ")[1:]]


@pytest.mark.e2e
def test_pipelined_writes_on_one_connection_are_each_answered_and_written(
        serve: ServerProcess, database_url: str) -> None:
    serve.start()
    sock = socket.create_connection(("127.0.0.1", serve.port), timeout=BOUND)
    sock.sendall(kept_open("piped-a") + kept_open("piped-b") + member_change("piped-c"))
    assert answers(sock) == [200, 200, 200]
    assert mentions(database_url, "piped-") == 3
    with serve.client() as http:
        scraped = http.get("/metrics").text
    assert 'status="499"' not in scraped and 'status="5' not in scraped


@pytest.mark.e2e
def test_a_client_that_half_closes_after_its_write_is_no_failure_of_the_service(
        serve: ServerProcess) -> None:
    """Whether its write ran depends on when the end was read; either way the service counts
    the request as the client's doing or as answered, never as its own failure."""
    serve.start()
    sock = socket.create_connection(("127.0.0.1", serve.port), timeout=BOUND)
    sock.sendall(member_change("half-closed"))
    sock.shutdown(socket.SHUT_WR)
    answers(sock)
    loop_turns(serve.port)
    with serve.client() as http:  # through the handlers' queue, behind the write
        assert http.put("/v1/namespaces/e2e/members", headers={"X-Context-Subject": ADMIN},
                        json={"subject": {"kind": "user", "name": "after"},
                              "role": "owner"}).status_code == 200
        scraped = http.get("/metrics").text
    assert 'status="5' not in scraped
    assert "Exception in ASGI application" not in serve.log_text()
