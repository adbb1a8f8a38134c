"""A request the drain answers ``503 ... retry against another instance`` writes nothing, then or
later: at SIGTERM a create waits in the event loop's group commit (its transaction waits for the
event table's lock) and a member change waits in its handler thread (its read of the log waits
for the same lock); past the grace both are answered 503 and, once the lock goes, neither is in
the log. The service shares a database of the suite's PostgreSQL, which holds the lock."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.e2e.server import ServerProcess, await_no_processes, context
from tests.e2e.test_shutdown import _request as in_background
from tests.support.event_table import waiting_for_the_lock

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.slow]
ADMIN = {"X-Context-Subject": "service:context-service-admin"}
ALICE = {"X-Context-Subject": "user:alice"}
UNAVAILABLE = {"error": "unavailable",
               "message": "the service is shutting down; retry against another instance"}


@pytest.fixture
def server(data_dir: Path, database_url: str) -> Iterator[ServerProcess]:
    proc = ServerProcess(data_dir, env={"CS_WORKERS": "", "CS_SHUTDOWN_GRACE": "2"})
    proc.env["CS_DATABASE_URL"] = database_url
    yield proc
    proc.cleanup()


def _until(check: Callable[[], bool], bound: float = 30.0) -> bool:
    """Poll ``check`` for at most ``bound`` seconds; whether it came true."""
    deadline = time.monotonic() + bound
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _mentions(database_url: str, text: str) -> int:
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM stored_events"
                           " WHERE position(%s::bytea in state) > 0", (text.encode(),)).fetchone()
    assert row is not None
    return int(row[0])


def test_requests_answered_unavailable_at_shutdown_write_nothing_later(
        server: ServerProcess, database_url: str) -> None:
    server.start()
    with server.client() as http:  # the loop's append connection is open, alice owns e2e
        assert http.put("/v1/namespaces/e2e/members", headers=ADMIN, json={
            "subject": {"kind": "user", "name": "alice"}, "role": "owner"}).status_code == 200
        assert http.post("/v1/contexts", headers=ALICE,
                         json=context("before")).status_code == 201
    created: dict[str, Any] = {}
    member: dict[str, Any] = {}
    with psycopg.connect(database_url) as blocker:
        blocker.execute("LOCK TABLE stored_events IN ACCESS EXCLUSIVE MODE")
        threads = [
            in_background(lambda h: h.post("/v1/contexts", headers=ALICE,
                                            json=context("abandoned-create")),
                           server.url, created),
            in_background(lambda h: h.put("/v1/namespaces/e2e/members", headers=ADMIN, json={
                "subject": {"kind": "user", "name": "abandoned-bob"}, "role": "owner"}),
                server.url, member)]
        assert _until(lambda: waiting_for_the_lock(database_url) >= 2), "never blocked"
        assert server.proc is not None
        server.proc.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(30)
        for out in (created, member):
            assert out["response"].status_code == 503, out
            assert out["response"].json() == UNAVAILABLE
        # the abandoned append in flight is cancelled on the server (it stops waiting); the
        # handler thread still waits for its read of the log
        _until(lambda: waiting_for_the_lock(database_url) <= 1, bound=5)
        blocker.rollback()  # the lock goes: whatever is still running may write now
    assert server.proc.wait(30) == 0, server.log_text()[-3000:]
    assert await_no_processes(server.data_dir, timeout=2) == []
    [drain] = [r for r in server.log_records() if r.get("step") == "requests drained"]
    assert drain["answered_unavailable"] == 2
    assert _mentions(database_url, "before") == 1  # the log is read as it should be
    assert (_mentions(database_url, "abandoned-create"),
            _mentions(database_url, "abandoned-bob")) == (0, 0)
