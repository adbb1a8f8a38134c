"""Clones and GC of a context while a session another replica left behind holds that context's
turn (docs/operations.md, Hung dependencies: every wait for a lock another session holds ends
after ``CS_LOCK_WAIT_SECONDS`` with ``500``, nothing written; decision 0056). Before, each such
request waited for as long as that session lived, holding a handler thread: a client that gave
up left it waiting all the same (a running handler is waited for), and the process's exit
waits for its handler threads."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from context_service import bootstrap
from context_service.adapters.postgres.lock import lock_key
from context_service.domain.cluster import snapshot_object_name
from context_service.http.routes import lifecycle as lifecycle_routes
from tests.api.conftest import Api
from tests.api.lifecycle_service import lifecycle_service
from tests.support.fake_cluster import FakeCluster

pytestmark = [pytest.mark.postgres]
NS = "team1"
LOCK_WAIT = 1.0  # CS_LOCK_WAIT_SECONDS for these tests
READ_WAIT = 2.0  # CS_READ_WAIT_SECONDS for these tests (the turns wait for 3 s and 4 s)
PATIENCE = 12.0  # far past the bound; a request still waiting then waits on the session


@pytest.fixture
def served(tmp_path: Path, database_url: str) -> Iterator[tuple[Api, FakeCluster,
                                                                bootstrap.Container]]:
    with lifecycle_service(tmp_path, database_url, lock_wait_seconds=LOCK_WAIT,
                           read_wait_seconds=READ_WAIT) as (api, container, fake):
        yield api.as_("user:alice"), fake, container


def _path(context: str, suffix: str = "") -> str:
    return f"/v1/namespaces/{NS}/contexts/{context}{suffix}"


def _ready_snapshot(api: Api, fake: FakeCluster, container: bootstrap.Container) -> None:
    body = {"name": "notes", "namespace": NS, "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce",
                        "storageClass": "fast"}}
    assert api.post("/v1/contexts", body).status_code == 201
    assert api.post(_path("notes", "/snapshots"), {"name": "s1"}).status_code == 201
    worker = container.snapshot_worker()
    assert not worker.run_once().failures
    fake.set_snapshot_status(NS, snapshot_object_name("notes", "s1"))
    assert not worker.run_once().failures


def _while_turn_held(database_url: str, call: Any) -> tuple[bool, Any]:
    """``call`` on a thread while a stuck session holds notes' turn: whether it answered
    before the session went, and its answer (it ends once the session is gone)."""
    answer: dict[str, Any] = {}
    with psycopg.connect(database_url, autocommit=True) as stuck:
        stuck.execute("SELECT pg_advisory_lock(%s)", (lock_key(f"lifecycle-source/{NS}/notes"),))
        thread = threading.Thread(target=lambda: answer.update(r=call()), daemon=True)
        thread.start()
        thread.join(PATIENCE)
        answered = not thread.is_alive()
    thread.join(PATIENCE)
    return answered, answer.get("r")


@pytest.mark.parametrize("write", ["gc", "clone"])
def test_a_clone_or_gc_behind_a_stuck_turn_answers_500_within_the_lock_wait(
        served: tuple[Api, FakeCluster, bootstrap.Container], database_url: str,
        write: str) -> None:
    api, fake, container = served
    _ready_snapshot(api, fake, container)
    assert api.put(_path("notes", "/retention"), {"keepLast": 1}).status_code == 200
    head = container.store.head()
    if write == "gc":
        answered, r = _while_turn_held(database_url, lambda: api.post(_path("notes", "/gc")))
    else:
        answered, r = _while_turn_held(database_url, lambda: api.post(
            _path("notes", "/clones"), {"name": "copy", "snapshot": "s1"}))
    assert answered, "the request waited for the stuck session's turn as long as it lived"
    assert (r.status_code, r.json()["error"]) == (500, "internal_error"), r.text
    assert container.store.head() == head  # nothing was written
    # the turn is free again: the same writes go through
    assert api.post(_path("notes", "/clones"),
                    {"name": "copy", "snapshot": "s1"}).status_code == 201
    assert api.post(_path("notes", "/gc")).status_code == 200


@pytest.mark.parametrize("write", ["gc", "clone"])
def test_a_clone_or_gc_behind_this_process_s_busy_turn_answers_503_in_time(
        served: tuple[Api, FakeCluster, bootstrap.Container], write: str) -> None:
    """This process's own turn (a request of it inside the turn, or queued ahead) is waited
    for as long as the replicas' turn at most, then ``503 unavailable``, nothing written:
    before, requests queued behind it without a bound, each up to the replicas' wait, holding
    handler threads, and with them every context sharing the turn's stripe."""
    api, fake, container = served
    _ready_snapshot(api, fake, container)
    head = container.store.head()
    held = lifecycle_routes._turns(NS, "notes")
    assert held.acquire(timeout=PATIENCE)
    try:
        if write == "gc":
            r = api.post(_path("notes", "/gc"))
        else:
            r = api.post(_path("notes", "/clones"), {"name": "copy", "snapshot": "s1"})
    finally:
        held.release()
    assert (r.status_code, r.json()["error"]) == (503, "unavailable"), r.text
    assert "retry" in r.json()["message"]
    assert container.store.head() == head  # nothing was written
