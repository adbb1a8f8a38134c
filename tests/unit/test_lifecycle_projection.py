"""The snapshot_objects projection step, pure: rows follow records, observations, GC runs,
observed deletions and context deletions; the same history gives the same rows whatever the
batching."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.cluster import ContextSnapshot
from context_service.domain.context import events as ev
from context_service.domain.context import lifecycle as lc
from context_service.domain.context.events import ContextAdopted, ContextDeleted, Storage
from context_service.domain.events import Event
from context_service.domain.stream import Recorded, context_stream
from context_service.projections.snapshots.projection import SnapshotObjects, step
from context_service.projections.snapshots.view import Rows, SnapshotObject
from tests.unit.strategies import EPOCH

STREAM = context_stream("team1", "notes")
WHO = "user:alice"


def recorded(events: Iterable[Event]) -> list[Recorded]:
    return [Recorded(i + 1, STREAM, i + 1, type(e).__name__, e) for i, e in enumerate(events)]


def taken(name: str) -> ev.SnapshotRecorded:
    return ev.SnapshotRecorded(
        at=EPOCH, actor=WHO, name=name, object_name=f"context-notes-{name}", type="memory",
        size="1Gi", access_mode="ReadWriteOnce", storage_class="fast", snapshot_class="snap",
        revision="r", protected=True, labels={"a": "1"})


def observed(name: str, status: str, error: str = "") -> ev.SnapshotObserved:
    return ev.SnapshotObserved(at=EPOCH, actor=WHO, name=name, status=status, error=error)


def collected(*names: str) -> ev.SnapshotsCollected:
    return ev.SnapshotsCollected(at=EPOCH, actor=WHO, deleted=names, kept=())


def object_deleted(name: str) -> ev.SnapshotObjectDeleted:
    return ev.SnapshotObjectDeleted(at=EPOCH, actor=WHO, name=name,
                                    object_name=f"context-notes-{name}")


def rows_after(events: Iterable[Event]) -> dict[str, SnapshotObject]:
    rows: dict[str, SnapshotObject] = {}
    for r in recorded(events):
        step(rows, r)
    return rows


def test_a_recorded_snapshot_asks_for_its_volume_snapshot() -> None:
    row = rows_after([taken("s1")])["s1"]
    assert row == SnapshotObject(
        desired=ContextSnapshot(namespace="team1", context="notes", snapshot="s1", type="memory",
                                snapshot_class="snap", size="1Gi", access_mode="ReadWriteOnce",
                                storage_class="fast", source_revision="r", protected=True,
                                user_labels={"a": "1"}),
        object_name="context-notes-s1")


def test_rows_follow_observations_gc_and_deletions() -> None:
    rows = rows_after([taken("s1"), taken("s2"), observed("s1", "failed", "boom"),
                       collected("s1")])
    assert (rows["s1"].status, rows["s1"].error, rows["s1"].collected) == ("failed", "boom", True)
    assert rows["s2"].collected is False
    rows = rows_after([taken("s1"), collected("s1"), observed("s1", "ready"),
                       object_deleted("s1")])
    assert rows == {}


def test_a_context_deletion_forgets_live_rows_but_not_pending_deletions() -> None:
    deleted = ContextDeleted(at=EPOCH + timedelta(1), actor=WHO, force=False)
    rows = rows_after([taken("s1"), taken("s2"), collected("s1"), deleted])
    assert list(rows) == ["s1"]
    assert rows["s1"].collected


def test_a_retaken_name_replaces_the_collected_row() -> None:
    rows = rows_after([taken("s1"), collected("s1"), taken("s1"), object_deleted("s1")])
    assert rows["s1"].collected is False


def test_adopted_snapshots_are_managed_under_their_own_object_names() -> None:
    adopted = ev.SnapshotRecord(
        name="old", object_name="legacy-name", type="state", size="2Gi",
        access_mode="ReadWriteMany", storage_class="fast", snapshot_class="snap",
        created_at=EPOCH, status="ready")
    rows = rows_after([ContextAdopted(
        at=EPOCH, actor=WHO, namespace="team1", name="notes", type="state",
        storage=Storage("pvc", "2Gi", "ReadWriteMany", "fast"), phase="Bound", grants=(),
        snapshots=(adopted,)), collected("old")])
    assert rows["old"].object_name == "legacy-name"
    assert (rows["old"].status, rows["old"].collected, rows["old"].desired.size) == (
        "ready", True, "2Gi")


class MemoryView:
    def __init__(self) -> None:
        self.rows: Rows = {}

    def load(self, stream_ids: Iterable[uuid.UUID]) -> Rows:
        return {sid: dict(self.rows[sid]) for sid in stream_ids if sid in self.rows}

    def replace(self, rows: Rows) -> None:
        for sid, named in rows.items():
            self.rows[sid] = dict(named)


names = st.sampled_from(("s1", "s2", "s3"))
events = st.one_of(
    names.map(taken), st.builds(observed, names, st.sampled_from(lc.STATUSES)),
    st.lists(names, max_size=2).map(lambda n: collected(*n)), names.map(object_deleted),
    st.just(ContextDeleted(at=EPOCH, actor=WHO, force=True)))


@given(st.lists(events, max_size=20), st.integers(1, 6))
def test_batching_does_not_change_the_rows(history: list[Event], size: int) -> None:
    whole, paged = MemoryView(), MemoryView()
    records = recorded(history)
    SnapshotObjects().apply(whole, records)
    for start in range(0, len(records), size):
        SnapshotObjects().apply(paged, records[start:start + size])
    assert whole.rows.get(STREAM.id, {}) == paged.rows.get(STREAM.id, {}) == rows_after(history)
