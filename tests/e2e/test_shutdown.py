"""SIGTERM is a clean shutdown and nothing outlives the service: ``serve`` finishes requests in
flight within ``CS_SHUTDOWN_GRACE`` (answering 503 past it), stops its workers and then its
embedded servers in order, PostgreSQL last, and leaves no process of its data directory; a
SIGKILLed ``serve`` leaves none a few seconds later, and the next start stops the stale children
a dead owner left behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from tests.e2e.server import ServerProcess, await_no_processes, context, data_dir_processes

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.nats, pytest.mark.slow]
RELAY = {"CS_WORKERS": "projections,relay"}


@pytest.fixture
def processes(data_dir: Path) -> Iterator[list[ServerProcess]]:
    """Every process a test starts, cleaned up whatever the test did."""
    started: list[ServerProcess] = []
    yield started
    for proc in reversed(started):
        proc.cleanup()


def shutdown_steps(server: ServerProcess) -> list[str]:
    return [r["step"] for r in server.log_records() if str(r.get("message", "")).startswith(
        "shutdown:") and "step" in r]


def in_order(steps: list[str], *expected: str) -> bool:
    positions = [steps.index(step) for step in expected if step in steps]
    return len(positions) == len(expected) and positions == sorted(positions)


def wait_for(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_sigterm_mid_burst_loses_no_acknowledged_write_and_leaves_nothing(
        data_dir: Path, processes: list[ServerProcess]) -> None:
    server = ServerProcess(data_dir, env=RELAY)
    processes.append(server)
    server.start()
    acknowledged: list[str] = []
    statuses: set[int] = set()
    lock = threading.Lock()

    def writer(worker: int) -> None:
        with server.client() as http:
            for i in range(10_000):
                name = f"c{worker}-{i}"
                try:
                    response = http.post("/v1/contexts", json=context(name))
                except httpx.HTTPError:
                    return  # the listener closed: this write was never acknowledged
                with lock:
                    statuses.add(response.status_code)
                    if response.status_code == 201:
                        acknowledged.append(name)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(6)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(acknowledged) >= 60)
    code, seconds = server.signal_and_wait(signal.SIGTERM, timeout=40)
    for thread in threads:
        thread.join(30)

    assert code == 0, server.log_text()[-3000:]
    assert statuses <= {201, 503}, statuses  # a drained write is answered, never a 500
    assert await_no_processes(data_dir, timeout=2) == []
    steps = shutdown_steps(server)
    assert in_order(steps, "listener closed", "requests drained", "worker stopped",
                    "nats-server", "database connections closed", "postgres"), steps
    assert steps[-1] == "postgres"
    assert seconds < 15, seconds

    server.start()
    with server.client() as http:
        listed = {c["name"] for c in http.get("/v1/namespaces/e2e/contexts").json()["items"]}
    assert set(acknowledged) <= listed
    assert server.signal_and_wait(signal.SIGINT)[0] == 0  # Ctrl-C: the same shutdown
    assert await_no_processes(data_dir, timeout=2) == []


def _request(call: Callable[[httpx.Client], httpx.Response], url: str,
             out: dict[str, Any]) -> threading.Thread:
    def run() -> None:
        with httpx.Client(base_url=url, timeout=60) as http:
            try:
                out["response"] = call(http)
            except httpx.HTTPError as exc:
                out["error"] = exc
        out["at"] = time.monotonic()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_requests_in_flight_finish_within_the_grace_and_get_503_past_it(
        data_dir: Path, processes: list[ServerProcess], database_url: str) -> None:
    """Reads wait for views no process maintains: one is answered when a projections worker
    catches up during the drain, the other (a query-index view) gets 503 at the grace. The
    service and the worker share a database of the suite's PostgreSQL (the drain is the point,
    not the embedded server)."""
    env = {"CS_WORKERS": "", "CS_READ_WAIT_SECONDS": "60", "CS_SHUTDOWN_GRACE": "8"}
    server = ServerProcess(data_dir, env=env)
    server.env["CS_DATABASE_URL"] = database_url
    processes.append(server)
    server.start()
    with server.client() as http:
        assert http.post("/v1/contexts", json=context("kept")).status_code == 201
    listing: dict[str, Any] = {}
    query: dict[str, Any] = {}
    threads = [
        _request(lambda h: h.get("/v1/namespaces/e2e/contexts"), server.url, listing),
        _request(lambda h: h.post("/v1/namespaces/e2e/query", json={"query": "kept"}),
                 server.url, query)]
    time.sleep(1.5)  # both accepted and waiting for their views
    assert not listing and not query
    assert server.proc is not None
    signalled = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    wait_for(lambda: "listener closed" in shutdown_steps(server))
    [drain] = [r for r in server.log_records() if r.get("step") == "listener closed"]
    assert drain["in_flight"] == 2

    worker = ServerProcess(data_dir, env=env, command=("worker", "projections"),
                           log_name="worker.log")
    worker.env["CS_DATABASE_URL"] = database_url
    processes.append(worker)
    worker.start()
    threads[0].join(30)
    response = listing["response"]
    assert response.status_code == 200, response.text
    assert [c["name"] for c in response.json()["items"]] == ["kept"]
    assert worker.signal_and_wait(signal.SIGTERM)[0] == 0

    threads[1].join(30)
    late = query["response"]
    assert late.status_code == 503
    assert late.json() == {"error": "unavailable", "message": "the service is shutting down; "
                           "retry against another instance"}
    assert query["at"] - signalled >= 8
    assert server.proc.wait(30) == 0
    assert await_no_processes(data_dir, timeout=2) == []
    [drained] = [r for r in server.log_records() if r.get("step") == "requests drained"]
    assert drained["answered_unavailable"] == 1


# Starts the embedded PostgreSQL and nats-server of a data directory the way an older version
# did (daemonized, no death signal), then waits to be killed: its servers outlive it.
ORPHANING_OWNER = """
import sys, time
from pathlib import Path
from context_service.adapters import children
children._PRCTL = None
from context_service.adapters.nats.server import EmbeddedNatsServer
from context_service.adapters.postgres import embedded
data = Path(sys.argv[1])
embedded.start(data)
EmbeddedNatsServer(data / "nats", sys.argv[2]).start()
print("ready", flush=True)
time.sleep(600)
"""


def test_sigkill_leaves_no_child_and_the_next_start_stops_stale_ones(
        data_dir: Path, processes: list[ServerProcess]) -> None:
    server = ServerProcess(data_dir, env=RELAY)
    processes.append(server)
    server.start()
    running = data_dir_processes(data_dir)
    assert {Path(p.info["cmdline"][0]).name for p in running} >= {"postgres", "nats-server"}
    server.kill()
    assert await_no_processes(data_dir, timeout=5) == []

    with subprocess.Popen([sys.executable, "-c", ORPHANING_OWNER, str(data_dir),
                           server.env["CS_NATS_LISTEN"]], stdout=subprocess.PIPE) as owner:
        assert owner.stdout is not None and owner.stdout.readline() == b"ready\n"
        owner.kill()
    time.sleep(1)
    stale = data_dir_processes(data_dir)
    assert {Path(p.info["cmdline"][0]).name for p in stale} == {"postgres", "nats-server"}

    server.start()
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in stale)
    stopped = {r["child"] for r in server.log_records()
               if r.get("message") == "stopping a stale child a dead owner left behind"}
    assert stopped == {"postgres", "nats-server"}
    with server.client() as http:
        assert http.post("/v1/contexts", json=context("after")).status_code == 201
    assert server.signal_and_wait(signal.SIGTERM)[0] == 0
    assert await_no_processes(data_dir, timeout=2) == []
