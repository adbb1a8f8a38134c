"""The order in which pooled sessions of the restricted login serve runs (issue 12): the
session put back last is taken first, so a warm backend serves the next run (that a session is
taken only after its return step is ``test_template_scope_binding.py``'s).

Three sessions in the pool, all open before the runs: a pool that rotated would hand out
three backends in turn.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from context_service import bootstrap
from context_service.config import Settings
from tests.security.template_grants import SLEEP, executable

pytestmark = pytest.mark.postgres
PID = "SELECT pg_backend_pid() AS pid"


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                    workers=(), agent_query_connections=3)


def pid_of(container: bootstrap.Container, sql: str = PID) -> int:
    result = container.sandbox.run(sql, (), [], "acme", [], 5000, 1)
    assert result.outcome == "ok", result
    return int(result.rows[0][0])


def scope_rows(container: bootstrap.Container) -> int:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT count(*) AS n FROM agent_data.scopes")
        return int(cur.fetchone()["n"])


def test_consecutive_runs_are_served_by_the_session_put_back_last(
        container: bootstrap.Container) -> None:
    container.sandbox.ready()
    pids = []
    for _ in range(6):
        pids.append(pid_of(container))
        assert container.sandbox.settle()
    assert len(set(pids)) == 1, pids  # a rotating pool would have shown three backends
    assert scope_rows(container) == 0


def test_after_overlapping_runs_the_one_that_finished_last_serves_the_next(
        container: bootstrap.Container) -> None:
    container.sandbox.ready()
    found: dict[str, int] = {}
    errors: list[BaseException] = []

    def sleeper(name: str, seconds: float) -> None:
        try:
            found[name] = pid_of(container, f"SELECT pg_backend_pid(), pg_sleep({seconds})::text")
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=sleeper, args=(name, seconds))
               for name, seconds in (("early", 0.1), ("late", 0.4))]
    with executable(container, SLEEP):  # revoked from the login since issue 24
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors, errors
    assert found["early"] != found["late"]  # both ran at once, on two sessions
    assert container.sandbox.settle()
    assert pid_of(container) == found["late"]
    assert container.sandbox.settle()
    assert scope_rows(container) == 0

