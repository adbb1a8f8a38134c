"""snapshot_objects: what the snapshot reconciler works from, one row per VolumeSnapshot.

A recorded snapshot asks for its VolumeSnapshot and follows its observed status; GC marks it
collected (delete the object); the observed deletion removes the row. A context deletion drops
its live rows only: its VolumeSnapshots stay in the cluster (spec 1.5), unmanaged.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import msgspec

from src.domain.cluster import ContextSnapshot
from src.domain.context.events import ContextDeleted
from src.domain.context.lifecycle import (
    SnapshotObjectDeleted,
    SnapshotObserved,
    SnapshotRecorded,
    SnapshotsCollected,
)
from src.domain.stream import Recorded
from src.projections.snapshots.view import SnapshotObject, SnapshotObjectsView

RELEVANT = (SnapshotRecorded, SnapshotObserved, SnapshotsCollected, SnapshotObjectDeleted,
            ContextDeleted)


class SnapshotObjects:
    name: str = "snapshot_objects"
    tables: tuple[str, ...] = ("snapshot_objects",)

    def apply(self, view: SnapshotObjectsView, batch: Sequence[Recorded]) -> None:
        touched: dict[uuid.UUID, list[Recorded]] = {}
        for recorded in batch:
            if recorded.stream.kind == "context" and isinstance(recorded.event, RELEVANT):
                touched.setdefault(recorded.stream.id, []).append(recorded)
        if not touched:
            return
        rows = view.load(touched.keys())
        for stream_id, records in touched.items():
            current = rows.setdefault(stream_id, {})
            for recorded in records:
                step(current, recorded)
        view.replace(rows)


def step(rows: dict[str, SnapshotObject], recorded: Recorded) -> None:
    """Apply one event to one context's rows (keyed by snapshot name), in place."""
    event = recorded.event
    replace = msgspec.structs.replace
    match event:
        case SnapshotRecorded():
            rows[event.name] = SnapshotObject(desired=_desired(recorded, event),
                                              object_name=event.object_name)
        case SnapshotObserved():
            row = rows.get(event.name)
            if row is not None and not row.collected:
                rows[event.name] = replace(row, status=event.status, error=event.error)
        case SnapshotsCollected():
            for name in event.deleted:
                if name in rows:
                    rows[name] = replace(rows[name], collected=True)
        case SnapshotObjectDeleted():
            row = rows.get(event.name)
            if row is not None and row.collected and row.object_name == event.object_name:
                del rows[event.name]
        case ContextDeleted():
            for name in [n for n, row in rows.items() if not row.collected]:
                del rows[name]


def _desired(recorded: Recorded, event: SnapshotRecorded) -> ContextSnapshot:
    return ContextSnapshot(
        namespace=recorded.stream.namespace, context=recorded.stream.key, snapshot=event.name,
        type=event.type, snapshot_class=event.snapshot_class, size=event.size,
        access_mode=event.access_mode, storage_class=event.storage_class,
        source_revision=event.revision, protected=event.protected,
        user_labels=dict(event.labels))
