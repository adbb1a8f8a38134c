"""The HTTP edge against a hostile caller: sizes of any length refused in linear time, bodies
refused before they are read, only the service's own host names answered, and a 500 that names a
request id instead of the exception. The route cases share one service (they store nothing); the
transport cases drive a real ``context-service serve`` process over raw sockets."""

from __future__ import annotations

import contextlib
import logging
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar import Request, Response, get
from litestar.testing import TestClient
from psycopg.conninfo import make_conninfo

from context_service import bootstrap
from context_service.http import hosts
from context_service.http.app import create_app
from context_service.http.limits import MAX_BODY
from tests.api.conftest import Api, context_body
from tests.e2e.server import ServerProcess
from tests.support.services import Databases

# one service for the module's route cases: a refused body and a failing route store nothing
pytestmark = pytest.mark.shared_service
MiB = 1024 * 1024
OWN_NAME = "context-service.test"
UNKNOWN_TOKEN = "bdk_" + "0123456789abcdef" + "_" + "A" * 43


# --- sizes: linear refusals through the routes --------------------------------------------------

def least_time(send: Callable[[], Any], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        send()
        best = min(best, time.perf_counter() - started)
    return best


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/v1/contexts", lambda size: context_body(size=size),
     "storage.size must be a positive Kubernetes quantity"),
    ("/v1/sandbox-pools",
     lambda size: {"name": "p", "replicas": 1,
                   "workspace": {"size": size, "accessMode": "ReadWriteOnce"}},
     "workspace.size must be a positive Kubernetes quantity"),
])
def test_a_thirty_thousand_digit_size_costs_what_a_short_one_does(
        api: Api, path: str, body: Callable[[str], dict[str, Any]], message: str) -> None:
    def refused(digits: int) -> Callable[[], None]:
        def send() -> None:
            resp = api.post(path, body("1" * digits + "x"))
            assert resp.status_code == 400 and resp.json()["message"] == message, resp.text
        return send

    short, long = least_time(refused(300)), least_time(refused(30_000))
    # a quadratic pattern made the long one cost thousands of times the short one
    assert long / short < 10, f"30,000 digits cost {long / short:.0f} times 300 digits"


# --- 500: a request id, never the exception -----------------------------------------------------

SECRET = "password=hunter2 at /var/lib/secret"


@get("/v1/test-failure", sync_to_thread=False)
def failing_v1() -> Response[bytes]:
    raise RuntimeError(SECRET)


@get("/api/agent/v1/test-failure", sync_to_thread=False)
def failing_api(request: Request[Any, Any, Any]) -> Response[bytes]:
    raise KeyError(SECRET)


@pytest.mark.parametrize(("path", "code"), [("/v1/test-failure", "error"),
                                            ("/api/agent/v1/test-failure", "code")])
def test_a_server_error_names_a_request_id_the_log_carries(
        container: bootstrap.Container, caplog: pytest.LogCaptureFixture,
        path: str, code: str) -> None:
    app = create_app(bootstrap.services(container), extra_routes=[failing_v1, failing_api])
    with TestClient(app=app) as client, caplog.at_level(logging.ERROR):
        resp = client.get(path)
    assert resp.status_code == 500
    request_id = resp.headers["X-Request-Id"]
    body = resp.json()
    assert body[code] in ("internal_error", "INTERNAL_ERROR")
    assert body["message"] == f"internal error (request id {request_id})"
    assert "hunter2" not in resp.text and "Error" not in resp.text
    logged = [r for r in caplog.records if r.getMessage() == "request failed"]
    assert [getattr(r, "request_id", None) for r in logged] == [request_id]
    assert logged[0].exc_info is not None and SECRET in str(logged[0].exc_info[1])


# --- hosts: pure rules ---------------------------------------------------------------------------

def test_host_names_compare_by_their_host_part() -> None:
    names = frozenset({"localhost", "127.0.0.1", "::1", "api.example"})
    for host in ("localhost", "LOCALHOST:8080", "[::1]:8080", "[::1]", "api.example.",
                 "127.0.0.1:1"):
        assert hosts.allowed(host, names, None), host
    for host in ("rebind.example", "localhost.rebind.example", "[::2]:8080", "", None,
                 "127.0.0.2"):
        assert not hosts.allowed(host, names, None), host
    assert hosts.allowed("anything", frozenset({hosts.ANY}), None)
    # the address the connection was accepted on (a probe's pod IP), never a name
    assert hosts.allowed("10.1.2.3:8080", names, "10.1.2.3")
    assert hosts.allowed("[fe80::0:1]:8080", names, "fe80::1")
    assert not hosts.allowed("10.1.2.4:8080", names, "10.1.2.3")
    assert not hosts.allowed("pod.example", names, "10.1.2.3")


# --- the transport: a real served process --------------------------------------------------------

@pytest.fixture(scope="module")
def served_database(pg_admin_url: str, pg_template: str,
                    test_databases: Databases) -> Iterator[str]:
    """A database of the module's own on the suite's PostgreSQL: the transport cases are about
    the HTTP edge, not the server's start-up with an embedded PostgreSQL."""
    name = test_databases.clone(pg_template)
    yield make_conninfo(pg_admin_url, dbname=name)
    test_databases.drop(name)


@contextlib.contextmanager
def serving(database: str, prefix: str, **env: str) -> Iterator[ServerProcess]:
    """``context-service serve`` on ``database`` (a folder of its own, ``env`` added), its
    workspace ``acme`` with alice as its owner; stopped and removed after."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    proc = ServerProcess(path, env={"CS_ALLOWED_HOSTS": OWN_NAME,
                                   "CS_WORKERS": "projections,query-index", **env})
    proc.env["CS_DATABASE_URL"] = database
    try:
        proc.start()
        with httpx.Client(base_url=proc.url, timeout=60) as http:
            resp = http.put("/v1/namespaces/acme/members",
                            json={"subject": {"kind": "user", "name": "alice"}, "role": "owner"},
                            headers={"X-Context-Subject": "service:context-service-admin"})
            assert resp.status_code == 200, resp.text
        yield proc
    finally:
        proc.cleanup()
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def served(served_database: str) -> Iterator[ServerProcess]:
    with serving(served_database, "cs-edge-") as proc:
        yield proc


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        import json

        return json.loads(self.body)


def read_answer(sock: socket.socket) -> Answer:
    """One HTTP/1.1 answer with a Content-Length (a reset after it is no matter)."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip()
                   for k, _, v in (line.partition(":") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return Answer(int(lines[0].split()[1]), headers, rest[:length])
    raise AssertionError(f"the connection was reset before an answer: {data[:200]!r}")


def connect(server: ServerProcess) -> socket.socket:
    # the timeout only stops a hung test; an answer comes as soon as the server sees the headers
    return socket.create_connection(("127.0.0.1", server.port), timeout=60)


def head(method: str, path: str, host: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}",
             *(f"{k}: {v}" for k, v in headers.items()), "", ""]
    return "\r\n".join(lines).encode()


def send_in_background(sock: socket.socket, data: bytes) -> threading.Thread:
    """Send part of a body without waiting for the server to read it (it never does)."""
    def send() -> None:
        with contextlib.suppress(OSError):
            sock.sendall(data)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


ANNOUNCED = [
    ("/v1/contexts", {}, 400, {"error": "invalid_request", "message": "request body too large"}),
    ("/api/w/acme/agent-credentials", {"X-Context-Subject": "user:alice"}, 400,
     {"code": "INVALID_REQUEST", "message": "request body too large"}),
    ("/api/agent/v1/context-packs", {"Authorization": f"Bearer {UNKNOWN_TOKEN}"}, 401,
     {"code": "UNAUTHORIZED", "message": "agent credential is not valid"}),
]


@pytest.mark.parametrize(("path", "extra", "status", "expected"), ANNOUNCED)
def test_an_announced_60_mib_body_is_answered_after_256_kib(
        served: ServerProcess, path: str, extra: dict[str, str], status: int,
        expected: dict[str, str]) -> None:
    host = f"{OWN_NAME}:{served.port}"
    with connect(served) as sock:
        sock.sendall(head("POST", path, host, {**extra, "Content-Length": str(60 * MiB),
                                               "Content-Type": "application/json"}))
        sender = send_in_background(sock, b" " * (256 * 1024))
        # another request is served meanwhile
        with httpx.Client(base_url=served.url, headers={"Host": host}, timeout=60) as other:
            assert other.get("/healthz").status_code == 200
        answer = read_answer(sock)
        assert (answer.status, answer.json()) == (status, expected)
        assert answer.headers.get("connection") == "close"  # the rest is never read
    sender.join(10)


def test_the_agent_credential_is_checked_before_any_body_byte(served: ServerProcess) -> None:
    """Not a byte of the announced body is sent: the answer cannot have waited for it."""
    with connect(served) as sock:
        sock.sendall(head("POST", "/api/agent/v1/context-sets/list", f"{OWN_NAME}:{served.port}",
                          {"Authorization": f"Bearer {UNKNOWN_TOKEN}", "Content-Length": "100"}))
        answer = read_answer(sock)
    assert (answer.status, answer.json()["code"]) == (401, "UNAUTHORIZED")


def test_a_chunked_body_stops_being_read_at_the_limit(served: ServerProcess) -> None:
    """Chunks past the limit, and never the last chunk: the answer comes all the same."""
    chunk = b" " * (64 * 1024)
    framed = (f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n") * (MAX_BODY // len(chunk) + 2)
    with connect(served) as sock:
        sock.sendall(head("POST", "/v1/contexts", f"{OWN_NAME}:{served.port}",
                          {"Transfer-Encoding": "chunked"}))
        sender = send_in_background(sock, framed)
        answer = read_answer(sock)
    sender.join(10)
    assert (answer.status, answer.json()) == (
        400, {"error": "invalid_request", "message": "request body too large"})


def test_a_body_at_the_limit_is_still_read(served: ServerProcess) -> None:
    with httpx.Client(base_url=served.url, headers={"Host": OWN_NAME}, timeout=60) as http:
        raw = b" " * (MAX_BODY - 2) + b"{}"
        resp = http.post("/v1/contexts", content=raw)
    assert resp.status_code == 400 and "request body" not in resp.json()["message"], resp.text


@pytest.mark.parametrize(("path", "expected"), [
    ("/settings", {"error": "misdirected_request"}),
    ("/v1/namespaces/team1/contexts", {"error": "misdirected_request"}),
    ("/api/agent/v1/context-packs", {"code": "MISDIRECTED_REQUEST"}),
    ("/healthz", {"error": "misdirected_request"}),
])
def test_a_rebound_host_name_is_not_answered(served: ServerProcess, path: str,
                                             expected: dict[str, str]) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for host in ("rebind.example", f"rebind.example:{served.port}", "localhost"):
            resp = http.get(path, headers={"Host": host})
            assert resp.status_code == 421, (host, resp.text)
            assert {k: v for k, v in resp.json().items() if k != "message"} == expected
        own = http.get(path, headers={"Host": f"{OWN_NAME}:{served.port}"})
        assert own.status_code in (200, 401, 405), own.text


def test_probes_by_the_socket_address_are_answered(served: ServerProcess) -> None:
    """Kubernetes probes name the pod IP: the address the connection came in on."""
    with httpx.Client(base_url=served.url, timeout=60) as http:
        for path in ("/healthz", "/readyz"):
            assert http.get(path, headers={"Host": f"127.0.0.1:{served.port}"}).status_code == 200
