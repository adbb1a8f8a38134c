"""Retention and GC through HTTP (spec 1.11, 6.6) against the session kube-apiserver: each keep
rule, dry run versus real run, the recorded GC event, and the worker deleting collected
VolumeSnapshots."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from context_service.domain.context.events import SnapshotObjectDeleted, SnapshotsCollected
from context_service.domain.events import Event
from tests.api.test_lifecycle import ALICE, BOB, NOT_FOUND, Env, env

__all__ = ["env"]
# one service for the module: each test's contexts live in its own Kubernetes namespace
pytestmark = [pytest.mark.k8s, pytest.mark.postgres, pytest.mark.shared_service]
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock(env: Env, monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The service's clock for this test (the module's service gets its own back after it)."""
    made = Clock()
    monkeypatch.setattr(env.container.contexts, "clock", made)
    return made


def take(env: Env, clock: Clock, *names: str, **body: Any) -> None:
    """Snapshots of ``notes``, an hour apart, made ready."""
    for name in names:
        assert env.snapshot("notes", name, **body).status_code == 201
        clock.now += timedelta(hours=1)
    env.converge()


def gc(env: Env, query: str = "") -> tuple[list[str], list[str], dict[str, Any]]:
    answer = env.api.post(env.path("notes", "/gc" + query))
    assert answer.status_code == 200
    body = answer.json()
    return ([s["name"] for s in body.get("deleted", [])],
            [s["name"] for s in body.get("kept", [])], body)


def listed(env: Env) -> list[str]:
    return [s["name"] for s in env.api.get(env.path("notes", "/snapshots")).json()["items"]]


def objects(env: Env) -> list[str]:
    return sorted(s.name for s in env.kube.list_snapshots(env.ns, "notes") if not s.deleting)


def events_of(env: Env, kind: type[Event]) -> list[Any]:
    """The ``kind`` events of the test's namespace (the service's log holds other tests')."""
    return [r.event for r in env.container.store.read(0, 100_000)
            if isinstance(r.event, kind) and r.stream.namespace == env.ns]


def retention(env: Env, body: dict[str, Any] | None) -> Any:
    return env.api.put(env.path("notes", "/retention"), body)


@pytest.fixture
def notes(env: Env, clock: Clock) -> Env:
    env.add_snapshot_class(f"{env.ns}-snap")
    env.context()
    return env


# --- retention --------------------------------------------------------------------------------


def test_retention_is_set_as_a_whole_and_answers_the_context(notes: Env) -> None:
    answer = retention(notes, {"keepLast": 3, "maxAge": "168h"})
    assert answer.status_code == 200
    assert answer.json()["name"] == "notes"
    assert "effectiveAccess" not in answer.json()
    _, state = notes.container.contexts.load(notes.ns, "notes")
    assert (state.retention.keep_last, state.retention.max_age) == (3, "168h")
    assert retention(notes, {"maxAge": None}).status_code == 200
    _, state = notes.container.contexts.load(notes.ns, "notes")
    assert (state.retention.keep_last, state.retention.max_age) == (0, "")


@pytest.mark.parametrize(("body", "message"), [
    ({"keepLast": -1, "maxAge": "nope"}, "invalid context resource: keepLast cannot be negative"),
    ({"maxAge": "7d"}, "invalid context resource: maxAge must be a non-negative duration"),
    ({"maxAge": "-1h"}, "invalid context resource: maxAge must be a non-negative duration"),
])
def test_retention_validation(notes: Env, body: dict[str, Any], message: str) -> None:
    answer = retention(notes, body)
    assert (answer.status_code, answer.json()) == (400, {"error": "invalid_request",
                                                         "message": message})


def test_retention_and_gc_need_administer(notes: Env) -> None:
    notes.grant("notes", BOB, "read", "write", "attach", "derive")
    bob = notes.api.as_(BOB)
    assert bob.put(notes.path("notes", "/retention"), {"keepLast": 1}).json() == NOT_FOUND
    assert bob.post(notes.path("notes", "/gc")).json() == NOT_FOUND
    assert bob.post(notes.path("notes", "/gc?dryRun=true")).json() == NOT_FOUND
    assert notes.api.post(notes.path("absent", "/gc")).json() == NOT_FOUND
    assert retention(notes, {"keepLast": 1.0}).status_code == 400
    assert retention(notes, {"keep_last": 1}).status_code == 400
    assert retention(notes, None).json()["message"] == "request body is required"


def test_gc_reads_no_body_and_lifecycle_paths_answer_405(notes: Env) -> None:
    answer = notes.api.post(notes.path("notes", "/gc"), raw=b"not json")
    assert (answer.status_code, answer.json()) == (200, {"dryRun": False})
    wrong = notes.api.delete(notes.path("notes", "/snapshots"))
    assert (wrong.status_code, wrong.headers["Allow"]) == (405, "GET, POST")
    assert notes.api.get(notes.path("notes", "/gc")).headers["Allow"] == "POST"
    assert notes.api.get(notes.path("notes", "/snapshots/")).status_code == 404


# --- GC ---------------------------------------------------------------------------------------


def test_without_a_policy_gc_keeps_everything(notes: Env, clock: Clock) -> None:
    take(notes, clock, "s1", "s2")
    deleted, kept, body = gc(notes)
    assert (deleted, kept, body["dryRun"]) == ([], ["s1", "s2"], False)
    assert "deleted" not in body
    assert body["kept"][0]["status"] == "ready"


def test_dry_run_deletes_nothing_and_the_real_run_deletes(notes: Env, clock: Clock) -> None:
    take(notes, clock, "s1", "s2", "s3")
    retention(notes, {"keepLast": 1})
    for query in ("?dryRun=true", "?dryRun=true&x=1"):
        assert gc(notes, query)[:2] == (["s1", "s2"], ["s3"])
    assert gc(notes, "?dryRun=true")[2]["dryRun"] is True
    assert listed(notes) == ["s1", "s2", "s3"]
    assert events_of(notes, SnapshotsCollected) == []

    deleted, kept, body = gc(notes, "?dryRun=True")  # only exactly "true" is a dry run
    assert (deleted, kept, body["dryRun"]) == (["s1", "s2"], ["s3"], False)
    assert body["deleted"][0]["snapshotName"] == "context-notes-s1"
    assert listed(notes) == ["s3"]
    assert notes.api.get(notes.path("notes", "/snapshots/s1")).json() == NOT_FOUND
    [run] = events_of(notes, SnapshotsCollected)
    assert (run.deleted, run.kept, run.keep_last, run.actor) == (("s1", "s2"), ("s3",), 1, ALICE)

    assert objects(notes) == ["context-notes-s1", "context-notes-s2", "context-notes-s3"]
    assert notes.worker.run_once().deleted == 2
    assert objects(notes) == ["context-notes-s3"]
    assert sorted(e.name for e in events_of(notes, SnapshotObjectDeleted)) == ["s1", "s2"]
    assert notes.worker.run_once().deleted == 0
    assert len(events_of(notes, SnapshotObjectDeleted)) == 2
    assert notes.snapshot("notes", "s1").status_code == 201  # the name is free again


def test_max_age_keeps_young_snapshots(notes: Env, clock: Clock) -> None:
    take(notes, clock, "s1", "s2", "s3")  # created at T0, T0+1h, T0+2h
    retention(notes, {"maxAge": "1h30m"})
    clock.now = T0 + timedelta(hours=3)
    assert gc(notes, "?dryRun=true")[:2] == (["s1", "s2"], ["s3"])
    clock.now = T0 + timedelta(hours=2, minutes=30)
    assert gc(notes)[:2] == (["s1"], ["s2", "s3"])


def test_protected_snapshots_survive_gc(notes: Env, clock: Clock) -> None:
    take(notes, clock, "old", protected=True)
    take(notes, clock, "labelled", labels={"protected": "True"})
    take(notes, clock, "plain", "newest")
    retention(notes, {"keepLast": 1})
    assert gc(notes)[:2] == (["plain"], ["old", "labelled", "newest"])


def publish(env: Env, revision: str) -> None:
    answer = env.api.post(env.path("notes", "/revisions"), {
        "id": revision, "createdAt": "2026-03-01T09:00:00Z", "operation": "sync"})
    assert answer.status_code == 201


def test_snapshots_referenced_by_live_clones_survive_gc(notes: Env, clock: Clock) -> None:
    take(notes, clock, "a")  # at REV
    publish(notes, "b2" * 32)
    take(notes, clock, "b", "c")
    publish(notes, "d3" * 32)
    take(notes, clock, "d", "e")
    assert notes.api.post(notes.path("notes", "/clones"),
                          {"name": "copy", "snapshot": "b"}).status_code == 201
    retention(notes, {"keepLast": 1})
    # "b" by name, "c" by the clone's source revision, "e" as the newest
    assert gc(notes, "?dryRun=true")[:2] == (["a", "d"], ["b", "c", "e"])
    assert notes.api.delete(notes.path("copy")).status_code == 204
    assert gc(notes)[:2] == (["a", "b", "c", "d"], ["e"])
