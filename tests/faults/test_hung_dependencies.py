"""Dependencies that hang rather than fail: a Kubernetes API server that accepts connections and
never answers, or answers each request slowly. The service is pointed at it the way a user does
(``CS_KUBE=kubeconfig``, ``KUBECONFIG``): a request that needs the API server answers the
documented ``500 internal_error`` once the request's Kubernetes budget is spent, and requests
that do not need it keep answering while more callers wait on the hung server than the service
has handler threads. And a PostgreSQL session that holds the event table's lock and stops: a
write behind it answers, and writes nothing, while the lock is still held."""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from context_service.adapters.kubernetes.rest import REQUEST_SLOTS
from tests.e2e.server import ServerProcess
from tests.faults.burst import NAMESPACE, SUBJECT, context_body

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
HANDLER_THREADS = 40  # the service's worker threads for blocking handlers (http.common)
NS = "default"  # CS_NAMESPACE's default: where pools live
PATIENCE = 120.0  # the test client's: far beyond any bound the service sets itself
# the service's Kubernetes budget of one request (CS_KUBE_REQUEST_BUDGET_SECONDS, 10 s by
# default): the tests wait it out, and what it bounds does not depend on its length
BUDGET = 2.0
# ...except where the checks must all be made while the held calls are still held: they take
# half a second on an idle machine, so this leaves room for a loaded one
HOLDING_BUDGET = 6.0


class ApiServer(ThreadingHTTPServer):
    """A stand-in for a kube-apiserver on 127.0.0.1: answers as an empty cluster would
    (``ok``), holds every request without an answer (``hang``, a frozen server: it notes when
    the caller gives up), answers only after ``delay`` seconds (``slow``), or answers ``503``
    asking to be asked again in 30 s (``busy``, as a starting kube-apiserver does)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = "ok"
        self.delay = 0.0
        self.released = threading.Event()  # ends every held request (teardown)
        self.lock = threading.Lock()
        self.received: list[str] = []  # "METHOD path" of every request, in arrival order
        self.held = 0  # requests held unanswered right now
        self.abandoned = 0  # held requests whose caller closed the connection

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def noticed_abandoned(self, count: int, within: float = 10.0) -> bool:
        """Whether ``count`` held requests were seen abandoned within ``within`` seconds."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self.lock:
                if self.abandoned == count:
                    return True
            time.sleep(0.01)
        return False

    def switch(self, mode: str, delay: float = 0.0) -> None:
        """Behave as ``mode`` from now on; what the service asked before (adoption at its
        start) is forgotten."""
        with self.lock:
            self.mode, self.delay = mode, delay
            self.received.clear()

    def count(self) -> int:
        with self.lock:
            return len(self.received)


class _Handler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_PATCH(self) -> None:
        self._answer()

    def do_DELETE(self) -> None:
        self._answer()

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        with self.server.lock:
            self.server.received.append(f"{self.command} {self.path}")
        if self.server.mode == "hang":
            self._hold()
            return
        if self.server.mode == "slow":
            self.server.released.wait(self.server.delay)
        status, body = _empty_cluster(self.command, self.path.split("?", 1)[0])
        if self.server.mode == "busy":
            status, body = 503, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                 "code": 503, "reason": "ServiceUnavailable",
                                 "message": "the server is starting"}
        data = json.dumps(body).encode()
        self.send_response(status)
        if self.server.mode == "busy":
            self.send_header("Retry-After", "30")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _hold(self) -> None:
        """Never answer; note when the caller closes the connection."""
        with self.server.lock:
            self.server.held += 1
        try:
            while not self.server.released.is_set():
                readable, _, _ = select.select([self.connection], [], [], 0.05)
                if readable and not self.connection.recv(1, socket.MSG_PEEK):
                    with self.server.lock:
                        self.server.abandoned += 1
                    return
        finally:
            with self.server.lock:
                self.server.held -= 1
        self.close_connection = True


def _empty_cluster(method: str, path: str) -> tuple[int, dict[str, Any]]:
    """What a cluster holding nothing answers: empty lists and discovery, 404 for one object."""
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) >= 3:
        rest = rest[2:]
    if method == "GET" and len(rest) <= 1:
        return 200, {"kind": "List", "apiVersion": "v1", "metadata": {"resourceVersion": "1"},
                     "items": [], "resources": []}
    return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                 "reason": "NotFound", "message": f"{path} not found"}


@pytest.fixture
def apiserver() -> Iterator[ApiServer]:
    server = ApiServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.released.set()
    server.shutdown()
    server.server_close()


@pytest.fixture
def service(request: pytest.FixtureRequest, tmp_path: Path, database_url: str,
            apiserver: ApiServer) -> Iterator[ServerProcess]:
    """``serve`` connected to ``apiserver`` through a kubeconfig, as a user configures it, with
    a Kubernetes budget of ``BUDGET`` seconds (or the test's indirect parameter)."""
    budget = getattr(request, "param", BUDGET)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "tarpit",
        "clusters": [{"name": "tarpit", "cluster": {"server": apiserver.url}}],
        "users": [{"name": "tarpit", "user": {"token": "t"}}],
        "contexts": [{"name": "tarpit", "context": {"cluster": "tarpit", "user": "tarpit"}}]}))
    proc = ServerProcess(tmp_path, env={"CS_WORKERS": "projections", "CS_KUBE": "kubeconfig",
                                        "KUBECONFIG": str(kubeconfig),
                                        "CS_KUBE_REQUEST_BUDGET_SECONDS": f"{budget:g}"})
    proc.env["CS_DATABASE_URL"] = database_url
    proc.start()
    yield proc
    if proc.proc is not None and proc.proc.poll() is None:
        proc.kill()


def pool(name: str, replicas: int = 1) -> dict[str, Any]:
    return {"name": name, "replicas": replicas,
            "workspace": {"size": "1Gi", "accessMode": "ReadWriteOnce"}}


def test_a_pool_create_on_a_frozen_api_server_ends_at_its_budget(
        service: ServerProcess, apiserver: ApiServer) -> None:
    apiserver.switch("hang")
    with httpx.Client(base_url=service.url, timeout=PATIENCE) as http:
        answer = http.post("/v1/sandbox-pools", json=pool("frozen"))
    assert answer.status_code == 500, answer.text
    assert answer.json()["error"] == "internal_error"
    assert f"did not answer within the request's {BUDGET:g}s" in answer.json()["message"]
    # the service gave up on the held call itself, before the client's patience: the tarpit
    # notices the closed connection within its next look (every 0.05 s), which may come just
    # after the answer
    assert apiserver.count() == 1
    assert apiserver.noticed_abandoned(1), "the held call was never given up"


def test_a_busy_api_server_s_retry_after_is_not_slept_inside_a_call(
        service: ServerProcess, apiserver: ApiServer) -> None:
    """urllib3 slept a ``503``'s ``Retry-After`` inside the call, three times, where neither the
    call's timeout nor the request's budget bounds it: one pool create took about 90 s. The
    request now answers at once and asks the server once."""
    apiserver.switch("busy")
    with httpx.Client(base_url=service.url, timeout=PATIENCE) as http:
        answer = http.post("/v1/sandbox-pools", json=pool("busy"))
    assert answer.status_code == 500, answer.text
    assert answer.json()["error"] == "internal_error"
    assert apiserver.count() == 1


def test_a_slow_api_server_bounds_the_whole_request_not_each_call(
        service: ServerProcess, apiserver: ApiServer) -> None:
    """Each answer comes well inside a per-call timeout; a dedicated pool of 4 replicas asks
    4 lists and 8 objects, so per-call timeouts alone would let it run for twelve answers
    (almost five budgets), and a budget per call for all of them too."""
    apiserver.switch("slow", BUDGET / 2.5)
    with httpx.Client(base_url=service.url, timeout=PATIENCE) as http:
        answer = http.post("/v1/sandbox-pools", json=pool("slow", replicas=4))
        assert answer.status_code == 500, answer.text
        assert "did not answer within" in answer.json()["message"]
        # nothing was recorded for the refused create
        assert http.get("/v1/sandbox-pools/slow").status_code == 404
    assert apiserver.count() <= 3  # the budget holds two answers and a half, never twelve


@pytest.mark.parametrize("service", [HOLDING_BUDGET], indirect=True, ids=["budget"])
def test_other_requests_answer_while_more_callers_than_threads_wait_on_a_frozen_server(
        service: ServerProcess, apiserver: ApiServer) -> None:
    callers = HANDLER_THREADS + 8
    apiserver.switch("hang")
    with httpx.Client(base_url=service.url, timeout=PATIENCE,
                      limits=httpx.Limits(max_connections=callers + 8)) as http, \
            ThreadPoolExecutor(callers) as pool_of_callers:
        waiting = [pool_of_callers.submit(http.post, "/v1/sandbox-pools", json=pool(f"p-{i}"))
                   for i in range(callers)]
        service.wait_until(lambda: apiserver.held >= REQUEST_SLOTS, 60,
                           "the callers never reached the API server")
        # requests that need no Kubernetes, each needing what the hung ones hold
        assert http.get("/healthz").status_code == 200
        assert http.get(f"/v1/namespaces/{NS}/contexts").status_code == 200  # a worker thread
        assert http.get("/v1/sandbox-pools").status_code == 200  # and the database pool
        assert http.get("/metrics").status_code == 200
        # ...answered while every held Kubernetes call was still held: none had to end first
        assert apiserver.abandoned == 0
        assert apiserver.held <= REQUEST_SLOTS  # never more threads on it than its slots
        answers = [f.result() for f in waiting]
    assert {a.status_code for a in answers} == {500}
    assert {a.json()["error"] for a in answers} == {"internal_error"}
    assert apiserver.count() == REQUEST_SLOTS  # the others were refused without a call


# --- PostgreSQL: a transaction that took the log's lock and stopped ------------------------------


def test_writes_behind_a_stuck_transaction_answer_and_write_nothing(
        serve: ServerProcess, database_url: str) -> None:
    """Another session (a forgotten psql, a stuck script) holds the event table's lock: writes
    on worker threads, more of them than there are threads, answer while the lock is still
    held, not when it is released; so does a read queued behind them; nothing is written."""
    serve.env["CS_LOCK_WAIT_SECONDS"] = "1"  # the bound, sooner (5 s by default)
    serve.start()
    callers = HANDLER_THREADS + 8
    names = [f"locked-{i}" for i in range(callers)]
    with httpx.Client(base_url=serve.url, headers=SUBJECT, timeout=PATIENCE,
                      limits=httpx.Limits(max_connections=callers + 8)) as http, \
            ThreadPoolExecutor(callers) as writers:
        for name in names:
            assert http.post("/v1/contexts", json=context_body(name)).status_code == 201
        with psycopg.connect(database_url) as stuck:
            stuck.execute("LOCK TABLE stored_events IN EXCLUSIVE MODE")  # and never commits
            waiting = [writers.submit(http.put, consumers(name), json=AGENT) for name in names]
            listed = http.get(f"/v1/namespaces/{NAMESPACE}/contexts")
            answers = [w.result() for w in waiting]
            held = stuck.execute(
                "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND granted"
                " AND relation = 'stored_events'::regclass").fetchone()
            assert held == (1,)  # every answer came while the lock was still held
            stuck.rollback()
        assert listed.status_code == 200
        assert {a.status_code for a in answers} == {500}, answers[0].text
        assert {a.json()["error"] for a in answers} == {"internal_error"}
        for name in names:  # nothing of them was written
            assert http.get(consumers(name)).json()["items"] == []
        assert http.put(consumers(names[0]), json=AGENT).status_code == 200


AGENT = {"kind": "agent", "name": "a", "accessMode": "readOnly"}


def consumers(context: str) -> str:
    return f"/v1/namespaces/{NAMESPACE}/contexts/{context}/consumers"
