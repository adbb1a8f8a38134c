"""GC at scale through HTTP (spec 1.11, 6.6): a context holding more snapshots than one event
could name still collects (its run is recorded in parts, every deletion reaching the views), and
finding the clones that pin a snapshot reads the clones of that context only, however many
contexts the namespace holds. Snapshots and contexts are appended to the log directly: recording
16,000 snapshots through the cluster would take minutes."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from context_service.adapters.postgres.views.contexts import ContextReadsSql
from context_service.domain.context import events as ev
from context_service.domain.context.events import CloneSource
from context_service.domain.events import Event, Subject
from context_service.domain.stream import context_stream
from tests.api.test_lifecycle import ALICE, REV, Env, env
from tests.support.pool_fixtures import eventually

__all__ = ["env"]
pytestmark = [pytest.mark.k8s, pytest.mark.postgres, pytest.mark.shared_service]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
OWNER = Subject("user", "alice")
# one event naming every snapshot (63 characters each) passed the log's 1,000,000-byte event
# limit at about 15,200 snapshots
MANY = 16_000


def long_name(i: int) -> str:
    return f"s{i:05d}-".ljust(63, "x")


def taken(env: Env, context: str, name: str, at: datetime,
          revision: str = REV) -> ev.SnapshotRecorded:
    return ev.SnapshotRecorded(
        at=at, actor=ALICE, name=name, object_name=f"context-{context}-{name[:6]}",
        type="memory", size="1Gi", access_mode="ReadWriteOnce", storage_class=env.storage_class,
        snapshot_class=f"{env.ns}-snap", revision=revision)


def append(env: Env, context: str, events: Sequence[Event]) -> None:
    version, _ = env.container.contexts.load(env.ns, context)
    env.container.store.append(context_stream(env.ns, context), version, events)


def created(env: Env, name: str, clone_of: CloneSource | None = None) -> ev.ContextCreated:
    return ev.ContextCreated(
        at=T0, actor=ALICE, namespace=env.ns, name=name, type="memory",
        storage=ev.Storage("pvc", "1Gi", "ReadWriteOnce", env.storage_class), owner=OWNER,
        clone_of=clone_of)


def retried(call: Callable[[], Any], seconds: float = 120) -> Any:
    """``call``'s answer, asked again while it is 503 (the views folding a context of 16,000
    snapshots may take longer than the read wait on a loaded machine: the answer says retry)."""
    deadline = time.monotonic() + seconds
    answer = call()
    while answer.status_code == 503 and time.monotonic() < deadline:
        time.sleep(0.5)
        answer = call()
    return answer


def gc(env: Env, query: str = "") -> dict[str, Any]:
    answer = retried(lambda: env.api.post(env.path("notes", "/gc" + query)))
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def names(body: dict[str, Any], key: str) -> list[str]:
    return [s["name"] for s in body.get(key, [])]


def runs(env: Env) -> list[ev.SnapshotsCollected]:
    return [r.event for r in env.container.store.read(0, 10_000_000)
            if isinstance(r.event, ev.SnapshotsCollected) and r.stream.namespace == env.ns]


@pytest.fixture
def notes(env: Env) -> Env:
    env.context(claim=False)
    return env


def test_gc_of_more_snapshots_than_one_event_could_name(notes: Env) -> None:
    every = [long_name(i) for i in range(MANY)]
    append(notes, "notes", [taken(notes, "notes", n, T0 + timedelta(seconds=i))
                            for i, n in enumerate(every)])

    kept_all = gc(notes)  # no policy: every snapshot is kept, and the run is recorded
    assert (kept_all["dryRun"], names(kept_all, "kept")) == (False, every)
    assert "deleted" not in kept_all

    assert retried(lambda: notes.api.put(notes.path("notes", "/retention"),
                                         {"keepLast": 1})).status_code == 200
    dry = gc(notes, "?dryRun=true")
    assert (names(dry, "deleted"), names(dry, "kept")) == (every[:-1], every[-1:])

    real = gc(notes)
    assert (names(real, "deleted"), names(real, "kept")) == (every[:-1], every[-1:])
    assert real["deleted"][0]["snapshotName"] == f"context-notes-{every[0][:6]}"
    listed = retried(lambda: notes.api.get(notes.path("notes", "/snapshots"))).json()["items"]
    assert [s["name"] for s in listed] == every[-1:]

    recorded = runs(notes)
    assert [n for r in recorded for n in r.deleted] == every[:-1]
    assert [n for r in recorded for n in r.kept] == every + every[-1:]

    def every_deletion_in_the_view() -> bool:  # the worker's view folds the parts in turn
        rows = notes.worker.reads.all()
        assert sorted(r.desired.snapshot for r in rows if r.collected) == every[:-1]
        assert [r.desired.snapshot for r in rows if not r.collected] == every[-1:]
        return True

    eventually(every_deletion_in_the_view, timeout=60, interval=0.5)


class Recorder:
    """What the catalog's read port is asked and answers, per method."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], Any]] = []

    def wrap(self, monkeypatch: pytest.MonkeyPatch, method: str) -> None:
        original: Callable[..., Any] | None = getattr(ContextReadsSql, method, None)
        if original is None:
            return

        def recorded(reads: ContextReadsSql, *args: Any) -> Any:
            answer = original(reads, *args)
            self.calls.append((method, args, answer))
            return answer

        monkeypatch.setattr(ContextReadsSql, method, recorded)


def test_a_dry_run_reads_the_clones_of_its_context_only(notes: Env,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    other_rev = "ab" * 32
    append(notes, "notes", [
        taken(notes, "notes", "s1", T0), taken(notes, "notes", "s2", T0 + timedelta(hours=1)),
        taken(notes, "notes", "s3", T0 + timedelta(hours=2), revision=other_rev),
        taken(notes, "notes", "s4", T0 + timedelta(hours=3)),
        taken(notes, "notes", "s5", T0 + timedelta(hours=4))])
    assert retried(lambda: notes.api.put(notes.path("notes", "/retention"),
                                         {"keepLast": 1})).status_code == 200
    by_name, by_revision = CloneSource("notes", "s1", ""), CloneSource("notes", "x", other_rev)
    append(notes, "by-name", [created(notes, "by-name", by_name)])
    append(notes, "by-revision", [created(notes, "by-revision", by_revision)])
    # not pins of notes: a clone of another context naming s2, a deleted clone naming s4
    append(notes, "elsewhere", [created(notes, "elsewhere", CloneSource("other", "s2", ""))])
    append(notes, "gone", [created(notes, "gone", CloneSource("notes", "s4", "")),
                           ev.ContextDeleted(at=T0, actor=ALICE, force=False)])
    for i in range(60):
        append(notes, f"plain-{i}", [created(notes, f"plain-{i}")])

    recorder = Recorder()
    for method in ("list", "clones_of"):
        recorder.wrap(monkeypatch, method)
    body = gc(notes, "?dryRun=true")
    assert [call[0] for call in recorder.calls] == ["clones_of"]
    _, asked, answer = recorder.calls[0]
    assert asked == (notes.ns, "notes")
    assert sorted(answer, key=lambda c: c.snapshot) == [by_name, by_revision]
    # s1 by name, s3 by revision, s5 the newest
    assert (names(body, "deleted"), names(body, "kept")) == (["s2", "s4"], ["s1", "s3", "s5"])
