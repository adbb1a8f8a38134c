"""SIGKILL of a replica in the middle of a clone, between its two steps: the clone took its turn
for the source context (an advisory lock on a connection of its own) and sent its append, which
waits for the event table's lock. The kill ends the turn at once (the server sees its idle
connection close), but the append was already sent: a statement that waits for a lock does not
notice that its client is gone, so it used to commit once the lock went, seconds after the
replica died. Meanwhile another replica's GC of the source took the freed turn, read no clone and
collected the clone's snapshot: a live clone of a snapshot that GC deleted, which the turns exist
to prevent (spec 6.6 step 4). After the kill, nothing the dead replica sent may commit, and the
clone and the GC's deletion never both stand."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from context_service import bootstrap
from context_service.adapters.postgres.lock import lock_key
from context_service.domain.context import commands as cmd
from context_service.domain.events import Subject
from context_service.domain.stream import context_stream
from tests.e2e.server import ServerProcess
from tests.faults.burst import NAMESPACE, SUBJECT
from tests.faults.conftest import caught_up

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
OWNER = Subject("user", "faults")
RECONCILER = Subject("service", "context-service")
SOURCE, CLONE = "source", "copy"
PATH = f"/v1/namespaces/{NAMESPACE}/contexts/{SOURCE}"
TURN = lock_key(f"lifecycle-source/{NAMESPACE}/{SOURCE}")


@pytest.fixture
def replicas(tmp_path: Path, database_url: str) -> Iterator[list[ServerProcess]]:
    """Two ``serve`` processes on one database, as two API replicas (the projection worker
    runs in one of them at a time; the other stands by)."""
    made = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        # the first replica's lock wait is long enough that the test, not the bound, decides
        # when its blocked append may go on (with the default of 5 s the window is the same,
        # only shorter)
        wait = "60" if name == "a" else "5"
        proc = ServerProcess(tmp_path / name, env={"CS_WORKERS": "projections,query-index",
                                                   "CS_LOCK_WAIT_SECONDS": wait})
        proc.env["CS_DATABASE_URL"] = database_url
        made.append(proc)
    yield made
    for proc in made:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.kill()


def _source_with_two_ready_snapshots(container: bootstrap.Container) -> None:
    """``old`` and ``new``, both ready; keep the newest one: a GC deletes ``old`` unless a live
    clone was made from it."""
    contexts = container.contexts
    contexts.execute(NAMESPACE, SOURCE, cmd.CreateContext(
        actor=OWNER, name=SOURCE, namespace=NAMESPACE, type="memory", backend="pvc",
        size="1Gi", access_mode="ReadWriteOnce", storage_class=""))
    for snapshot in ("old", "new"):
        contexts.execute(NAMESPACE, SOURCE, cmd.RecordSnapshot(
            actor=OWNER, name=snapshot, storage_class="", snapshot_class="csi"))
        contexts.execute(NAMESPACE, SOURCE, cmd.ObserveSnapshot(
            actor=RECONCILER, name=snapshot, status="ready"))
        time.sleep(0.01)  # distinct creation times: ``old`` is the older
    contexts.execute(NAMESPACE, SOURCE, cmd.SetRetention(actor=OWNER, keep_last=1))


def _lock_waiters(conn: psycopg.Connection[tuple[object, ...]]) -> set[int]:
    """Backends waiting for the event table's lock now."""
    rows = conn.execute("SELECT pid FROM pg_locks WHERE NOT granted"
                        " AND relation = 'stored_events'::regclass").fetchall()
    return {int(str(r[0])) for r in rows}


def _turn_held(conn: psycopg.Connection[tuple[object, ...]]) -> bool:
    """The source context's turn across replicas is taken (a bigint advisory lock: its high
    and low halves as ``classid`` and ``objid``)."""
    row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                       " AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 1",
                       ((TURN >> 32) & 0xFFFFFFFF, TURN & 0xFFFFFFFF)).fetchone()
    return row is not None and int(str(row[0])) > 0


def _until(check: object, what: str, bound: float = 15.0) -> None:
    deadline = time.monotonic() + bound
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _post(url: str, path: str, body: object, out: list[httpx.Response | None]) -> None:
    try:
        with httpx.Client(base_url=url, headers=SUBJECT, timeout=30) as http:
            out.append(http.post(path, json=body) if body is not None else http.post(path))
    except httpx.HTTPError:
        out.append(None)  # the replica died with the request


def test_a_clone_killed_in_its_turn_never_commits_after_the_gc_that_followed(
        replicas: list[ServerProcess], inspector: bootstrap.Container,
        database_url: str) -> None:
    first, second = replicas
    _source_with_two_ready_snapshots(inspector)
    first.start()
    second.start()
    caught_up(inspector)
    with psycopg.connect(database_url, autocommit=True) as watch, \
            psycopg.connect(database_url) as blocker:
        blocker.execute("LOCK TABLE stored_events IN EXCLUSIVE MODE")  # appends wait; reads go
        clone: list[httpx.Response | None] = []
        sender = threading.Thread(target=_post, args=(
            first.url, PATH + "/clones", {"name": CLONE, "snapshot": "old"}, clone))
        sender.start()
        _until(lambda: _lock_waiters(watch) and _turn_held(watch),
               "the clone did not reach its append inside its turn")
        orphans = _lock_waiters(watch)
        first.kill()  # between the clone's two steps: turn taken, append not committed
        sender.join(30)
        _until(lambda: not _turn_held(watch), "the dead replica's turn was not released")
        # a moment for the dead replica's statements to end (whether they do is what the
        # assertions below tell): without it the GC could overtake a session about to notice
        gone = time.monotonic() + 1.0
        while orphans & _lock_waiters(watch) and time.monotonic() < gone:
            time.sleep(0.02)

        gc: list[httpx.Response | None] = []
        collector = threading.Thread(target=_post, args=(second.url, PATH + "/gc", None, gc))
        collector.start()
        _until(lambda: bool(_lock_waiters(watch) - orphans) or bool(gc),
               "the other replica's GC did not reach its append")
        blocker.rollback()  # the lock goes: whatever still waits for it commits now
        collector.join(30)

    assert clone == [None]  # the client of the dead replica got no answer
    assert gc and gc[0] is not None and gc[0].status_code == 200, gc
    deleted = {s["name"] for s in gc[0].json().get("deleted", [])}
    cloned = len(inspector.store.load(context_stream(NAMESPACE, CLONE)))
    # the clone, sent by a process that was dead before the GC began, did not commit after it;
    # had it committed first, the GC would have kept its snapshot
    assert not (cloned and "old" in deleted), (
        f"a live clone of snapshot 'old', which the GC after it deleted ({cloned} events)")
    assert cloned == 0 and deleted == {"old"}
    caught_up(inspector)
    with httpx.Client(base_url=second.url, headers=SUBJECT) as http:
        assert http.get(f"/v1/namespaces/{NAMESPACE}/contexts/{CLONE}").status_code == 404
        retried = http.post(PATH + "/clones", json={"name": CLONE, "snapshot": "old"})
        assert retried.status_code == 404, retried.text  # its snapshot is gone, as GC answered
