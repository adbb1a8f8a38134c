"""snapshot_objects: what the snapshot reconciler works from, one row per VolumeSnapshot.

A recorded (or adopted) snapshot asks for its VolumeSnapshot and follows its observed status;
GC marks it collected (delete the object); the observed deletion removes the row. A context
deletion drops its live rows only: its VolumeSnapshots stay in the cluster (spec 1.5), unmanaged.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import msgspec

from context_service.domain.cluster import ContextSnapshot
from context_service.domain.context.events import (
    ContextAdopted,
    ContextDeleted,
    SnapshotObjectDeleted,
    SnapshotObserved,
    SnapshotRecord,
    SnapshotRecorded,
    SnapshotsCollected,
)
from context_service.domain.stream import Recorded
from context_service.projections.snapshots.view import SnapshotObject, SnapshotObjectsView

RELEVANT = (SnapshotRecorded, SnapshotObserved, SnapshotsCollected, SnapshotObjectDeleted,
            ContextDeleted, ContextAdopted)


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
        case ContextAdopted():  # its VolumeSnapshots exist already, with their own names
            for snap in event.snapshots:
                rows[snap.name] = SnapshotObject(
                    desired=_desired(recorded, snap), object_name=snap.object_name,
                    status=snap.status, error=snap.error)
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


def _desired(recorded: Recorded, snap: SnapshotRecorded | SnapshotRecord) -> ContextSnapshot:
    return ContextSnapshot(
        namespace=recorded.stream.namespace, context=recorded.stream.key, snapshot=snap.name,
        type=snap.type, snapshot_class=snap.snapshot_class, size=snap.size,
        access_mode=snap.access_mode, storage_class=snap.storage_class,
        source_revision=snap.revision, protected=snap.protected, user_labels=dict(snap.labels))
