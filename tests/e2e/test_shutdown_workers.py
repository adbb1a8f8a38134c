"""``context-service worker NAME`` shuts down like ``serve``: SIGTERM stops the worker at a batch
boundary and releases its advisory lock (a standby takes over at once), then stops the embedded
nats-server it started; a SIGKILLed worker leaves no child running a few seconds later."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_service.adapters.children import Record, recorded_process
from tests.e2e.server import ServerProcess, await_no_processes, context
from tests.e2e.test_shutdown import shutdown_steps

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.nats, pytest.mark.slow]


@pytest.fixture
def processes() -> Iterator[list[ServerProcess]]:
    started: list[ServerProcess] = []
    yield started
    for proc in reversed(started):
        proc.cleanup()


def nats_child(data_dir: Path) -> Record:
    record = Record.read(data_dir / "nats" / "nats-server.child.json")
    assert record is not None
    return record


def test_worker_sigterm_hands_over_and_sigkill_leaves_no_child(
        data_dir: Path, processes: list[ServerProcess]) -> None:
    server = ServerProcess(data_dir, env={"CS_WORKERS": ""})  # owns the embedded PostgreSQL
    processes.append(server)
    server.start()
    with server.client() as http:
        for i in range(20):
            assert http.post("/v1/contexts", json=context(f"w{i}")).status_code == 201

    first, second = (ServerProcess(data_dir, env=server.env, command=("worker", "relay"),
                                   log_name=name) for name in ("first.log", "second.log"))
    processes += [first, second]
    first.start()
    first_nats = nats_child(data_dir)
    assert first.proc is not None and first_nats.owner == first.proc.pid
    second.launch()
    second.wait_until(lambda: second.logged("standing by"))

    code, seconds = first.signal_and_wait(signal.SIGTERM)
    assert code == 0 and seconds < 10, first.log_text()[-3000:]
    steps = shutdown_steps(first)
    assert steps == ["worker stopped", "nats-server", "database connections closed"], steps
    assert recorded_process(first_nats) is None

    second.wait_until(lambda: second.logged('"worker active"'), 15)  # the lock is free at once
    second_nats = nats_child(data_dir)
    assert second.proc is not None and second_nats.owner == second.proc.pid
    assert recorded_process(second_nats) is not None
    second.kill()
    server.wait_until(lambda: recorded_process(second_nats) is None, 5)

    assert server.signal_and_wait(signal.SIGTERM)[0] == 0
    assert await_no_processes(data_dir, timeout=2) == []


def test_a_worker_alone_owns_and_stops_its_servers(
        data_dir: Path, processes: list[ServerProcess]) -> None:
    worker = ServerProcess(data_dir, command=("worker", "relay"), log_name="worker.log")
    processes.append(worker)
    worker.start()
    assert worker.signal_and_wait(signal.SIGTERM)[0] == 0
    steps = shutdown_steps(worker)
    assert steps == ["worker stopped", "nats-server", "database connections closed",
                     "postgres"], steps
    assert await_no_processes(data_dir, timeout=2) == []
    worker.start()
    worker.kill()
    assert await_no_processes(data_dir, timeout=5) == []
