"""One process or many: the API with no in-process workers, projections in two worker
processes of which exactly one is active; killing it hands over to the standby."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.server import ServerProcess, context

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.slow]


def _worker(server: ServerProcess, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "context_service.cli", "worker",
                                 "projections"], env=server.env, stdout=out,
                                stderr=subprocess.STDOUT)


def _active(log: Path) -> bool:
    return log.exists() and "worker active" in log.read_text()


def _wait(check: object, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_standby_worker_takes_over(data_dir: Path, database_url: str) -> None:
    server = ServerProcess(data_dir, env={"CS_WORKERS": "", "CS_READ_WAIT_SECONDS": "20"})
    # the service and both workers share a database of the suite's PostgreSQL: the hand-over
    # is the point (a worker sharing the service's embedded one: test_shutdown_workers.py)
    server.env["CS_DATABASE_URL"] = database_url
    first_log, second_log = data_dir / "w1.log", data_dir / "w2.log"
    workers: list[subprocess.Popen[bytes]] = []
    try:
        server.start()
        workers.append(_worker(server, first_log))
        _wait(lambda: _active(first_log))
        workers.append(_worker(server, second_log))
        _wait(lambda: second_log.exists() and "standing by" in second_log.read_text())
        with server.client() as http:
            assert http.post("/v1/contexts", json=context("one")).status_code == 201
            names = [c["name"] for c in http.get("/v1/namespaces/e2e/contexts").json()["items"]]
            assert names == ["one"]
            workers[0].kill()
            workers[0].wait(10)
            _wait(lambda: _active(second_log))
            assert http.post("/v1/contexts", json=context("two")).status_code == 201
            listed = http.get("/v1/namespaces/e2e/contexts").json()
            assert "items" in listed, (listed, second_log.read_text()[-3000:])
            names = [c["name"] for c in listed["items"]]
            assert names == ["one", "two"]
    finally:
        for worker in workers:
            worker.kill()
            worker.wait(10)
        server.stop()
        server.cleanup()
