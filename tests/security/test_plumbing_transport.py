"""Admission at the transport, against a real ``context-service serve`` over raw sockets: agent
callers with a valid credential who send their body slowly must not hold the request threads
every other route needs."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.server import ServerProcess
from tests.security.test_edge_limits import connect, head, read_answer, serving
from tests.security.test_edge_limits import served_database as served_database  # the fixture

OWN_NAME = "context-service.test"
LIST = "/api/agent/v1/context-sets/list"
# more slow callers than the service has request threads (40)
SLOW_CALLERS = 48


@pytest.fixture(scope="module")
def served(served_database: str) -> Iterator[ServerProcess]:
    """A service with the per-credential limit off (one credential stands for many) and a
    workspace ``acme`` with alice as its owner."""
    with serving(served_database, "cs-plumbing-", CS_AGENT_RATE_PER_SECOND="0") as proc:
        yield proc


def credential(served: ServerProcess) -> str:
    with httpx.Client(base_url=served.url, timeout=60, headers={"Host": OWN_NAME}) as http:
        resp = http.post("/api/w/acme/agent-credentials",
                         json={"name": "slow", "scopes": ["context:read"], "expiresInDays": 1},
                         headers={"X-Context-Subject": "user:alice"})
        assert resp.status_code == 201, resp.text
        return str(resp.json()["token"])


def test_slow_agent_bodies_do_not_hold_the_request_threads(served: ServerProcess) -> None:
    token = credential(served)
    host = f"{OWN_NAME}:{served.port}"
    body = b'{"limit":5}'
    slow: list[socket.socket] = []
    try:
        for _ in range(SLOW_CALLERS):  # each sends its headers and one byte of its body
            sock = connect(served)
            sock.sendall(head("POST", LIST, host, {"Authorization": f"Bearer {token}",
                                                   "Content-Length": str(len(body))}) + body[:1])
            slow.append(sock)
        time.sleep(1.0)  # every one of them has passed its pipeline by now
        with httpx.Client(base_url=served.url, headers={"Host": host}, timeout=60) as other:
            started = time.monotonic()
            resp = other.get("/v1/namespaces/acme/contexts",
                             headers={"X-Context-Subject": "user:alice"})
            took = time.monotonic() - started
        assert resp.status_code == 200, resp.text
        # before, the slow bodies held every request thread until their 10 s ran out
        assert took < 3.0, f"a /v1 read waited {took:.1f} s behind slow agent bodies"
        for sock in slow:  # and each slow caller is answered once its body is complete
            sock.sendall(body[1:])
        for sock in slow:
            answer = read_answer(sock)
            assert answer.status == 200, answer.body
    finally:
        for sock in slow:
            with contextlib.suppress(OSError):
                sock.close()


def test_an_agent_body_that_never_arrives_is_refused_after_its_wait(
        served: ServerProcess) -> None:
    token = credential(served)
    with connect(served) as sock:
        sock.sendall(head("POST", LIST, f"{OWN_NAME}:{served.port}",
                          {"Authorization": f"Bearer {token}", "Content-Length": "10"}) + b"{")
        started = time.monotonic()
        answer = read_answer(sock)
        took = time.monotonic() - started
    assert (answer.status, answer.json()) == (400, {
        "code": "INVALID_REQUEST", "message": "request body did not arrive within 10 seconds"})
    assert 8.0 < took < 20.0, took
