"""The snapshot worker: converges VolumeSnapshots on the recorded snapshots (spec 6.6).

Level-triggered over the ``snapshot_objects`` view: each pass waits until the view has caught up
with the log, lists each namespace's managed VolumeSnapshots once, creates the missing ones
(create-if-absent, exact spec shape through the port), records observed status changes as
events, and deletes the VolumeSnapshots of garbage-collected snapshots, recording each deletion.
Passes run when the log moves, when a VolumeSnapshot changes (watch hint) and on a resync timer.

Two contexts can compute one object name (context ``a`` snapshot ``b-c`` and context ``a-b``
snapshot ``c`` both make ``context-a-b-c``): an object is a row's only when its labels name the
row's context and snapshot, so a row never reports, clones from or deletes another's data.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from context_service.domain.cluster import (
    MANAGED_BY,
    MANAGER,
    NAME_LABEL,
    SNAPSHOT_LABEL,
    Change,
    Cluster,
    ClusterError,
    SnapshotInfo,
    Watch,
    recordable_error,
)
from context_service.domain.context.commands import (
    Command,
    ObserveSnapshot,
    ObserveSnapshotObjectDeleted,
)
from context_service.domain.errors import DomainError
from context_service.domain.events import Subject
from context_service.domain.values import quote
from context_service.projections.snapshots.view import SnapshotObject, SnapshotObjectsReads

log = logging.getLogger(__name__)
RECONCILER = Subject("service", "context-service")
VIEW = "snapshot_objects"
REFUSED = (400, 422)  # the API server will refuse the same object again: no retry can succeed


class Commands(Protocol):
    def execute(self, namespace: str, name: str, command: Command) -> Any: ...


class LogSignal(Protocol):
    """The event log's head, to wake when it moves (``EventStore`` is one)."""

    def head(self) -> int: ...
    def wait_head(self, after: int, timeout: float) -> None: ...
    def wake(self) -> None: ...


def belongs(row: SnapshotObject, info: SnapshotInfo) -> bool:
    """The object is this row's: its labels name the row's context and snapshot (an adopted
    object without a snapshot label is named by its object name, as adoption names it)."""
    return (info.labels.get(NAME_LABEL) == row.desired.context
            and info.labels.get(SNAPSHOT_LABEL, info.name) == row.desired.snapshot)


def observed_status(info: SnapshotInfo) -> tuple[str, str]:
    """Spec 6.6: ``failed`` with the error when one is reported, ``ready`` when readyToUse,
    ``creating`` otherwise."""
    if info.error_message:
        return "failed", recordable_error(info.error_message)
    return ("ready" if info.ready_to_use else "creating"), ""


@dataclass
class PassReport:
    created: int = 0
    observed: int = 0
    deleted: int = 0
    failures: int = 0
    skipped: bool = False  # the view did not catch up in time


class SnapshotReconciler:
    """One instance per deployment (the worker lock); ``run_once`` is one pass."""

    def __init__(self, cluster: Cluster, reads: SnapshotObjectsReads, contexts: Commands,
                 caught_up: Callable[[float], bool], signal: LogSignal | None = None,
                 interval: float = 5.0, catch_up_seconds: float = 5.0,
                 min_gap: float = 0.2) -> None:
        self.cluster = cluster
        self.reads = reads
        self.contexts = contexts
        self.caught_up = caught_up
        self.signal = signal
        self.interval = interval
        self.catch_up_seconds = catch_up_seconds
        self.min_gap = min_gap  # coalesces bursts of log writes into one pass
        self.totals = PassReport()
        self.passes = 0
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._watch: Watch | None = None

    # --- one pass ---------------------------------------------------------------------------

    def run_once(self) -> PassReport:
        report = PassReport()
        if not self.caught_up(self.catch_up_seconds):
            report.skipped = True
            return report
        rows = self.reads.all()
        for namespace, group in itertools.groupby(rows, key=lambda r: r.namespace):
            try:
                self._namespace(namespace, list(group), report)
            except ClusterError as exc:
                report.failures += 1
                log.warning("snapshot pass failed", extra={"namespace": namespace,
                                                           "error": str(exc)})
        self._count(report)
        return report

    def _namespace(self, namespace: str, rows: list[SnapshotObject], report: PassReport) -> None:
        present = {s.name: s for s in self.cluster.list_snapshots(namespace)}
        for row in rows:
            seen = present.get(row.object_name)
            try:
                if seen is not None and not belongs(row, seen):
                    self._taken(row, report)
                elif row.collected:
                    self._remove(row, seen, report)
                elif seen is None:
                    self._missing(row, report)
                else:
                    self._observe(row, *observed_status(seen), report=report)
            except (ClusterError, DomainError) as exc:  # retried on the next pass
                report.failures += 1
                log.warning("snapshot action failed",
                            extra={"snapshot": row.object_name, "error": str(exc)})

    def _remove(self, row: SnapshotObject, seen: SnapshotInfo | None,
                report: PassReport) -> None:
        if seen is not None and not seen.deleting:
            self.cluster.delete_snapshot(row.namespace, row.object_name)
            report.deleted += 1
        self._execute(row, ObserveSnapshotObjectDeleted(
            actor=RECONCILER, name=row.desired.snapshot, object_name=row.object_name))

    def _taken(self, row: SnapshotObject, report: PassReport) -> None:
        """Another snapshot's object holds this row's name: a collected row's own object is gone
        (record that, delete nothing); a live one can never be made. The message names no
        context: the other one may be hidden from this snapshot's readers."""
        if row.collected:
            self._execute(row, ObserveSnapshotObjectDeleted(
                actor=RECONCILER, name=row.desired.snapshot, object_name=row.object_name))
            return
        error = f"VolumeSnapshot {quote(row.object_name)} belongs to another snapshot"
        self._observe(row, "failed", error, report=report)

    def _missing(self, row: SnapshotObject, report: PassReport) -> None:
        if row.status == "creating":
            self._create(row, report)
            return
        if row.status == "failed":
            return  # it keeps the reason it failed for
        # Observed before and gone now: a snapshot is never silently retaken from the live PVC.
        error = f"VolumeSnapshot {quote(row.object_name)} not found"
        self._observe(row, "failed", error, report=report)

    def _create(self, row: SnapshotObject, report: PassReport) -> None:
        try:
            created = self.cluster.ensure_snapshot(row.desired)
        except ClusterError as exc:
            if exc.status not in REFUSED:
                raise  # unreachable, throttled, forbidden for now: the next pass retries
            # e.g. labels beyond what annotations hold: failed, rather than creating for ever
            error = f"VolumeSnapshot {quote(row.object_name)} was refused: {exc.message}"
            self._observe(row, "failed", recordable_error(error), report=report)
            return
        if created:
            report.created += 1
            return
        self._occupied(row, report)

    def _occupied(self, row: SnapshotObject, report: PassReport) -> None:
        """The name was free in the managed listing, yet the create met an object: one without
        our labels (not listed) took it since the snapshot was recorded. It is never ours to
        report, clone from or delete, and no pass could create the row's own: failed, rather
        than ``creating`` for ever. One that is ours after all (made meanwhile) is observed."""
        seen = self.cluster.get_snapshot(row.namespace, row.object_name)
        if seen is None:
            return  # gone again: the next pass creates it
        if seen.labels.get(MANAGED_BY) == MANAGER and belongs(row, seen):
            self._observe(row, *observed_status(seen), report=report)
        else:
            self._taken(row, report)

    def _observe(self, row: SnapshotObject, status: str, error: str, *,
                 report: PassReport) -> None:
        if (status, error) == (row.status, row.error):
            return
        self._execute(row, ObserveSnapshot(actor=RECONCILER, name=row.desired.snapshot,
                                           status=status, error=error))
        report.observed += 1

    def _execute(self, row: SnapshotObject, command: Command) -> None:
        self.contexts.execute(row.namespace, row.desired.context, command)

    def _count(self, report: PassReport) -> None:
        self.passes += 1
        self.totals.created += report.created
        self.totals.observed += report.observed
        self.totals.deleted += report.deleted
        self.totals.failures += report.failures

    def gauges(self) -> list[tuple[str, str, dict[str, str], float]]:
        labels = {"worker": "snapshots"}
        return [("cs_snapshot_passes", "Snapshot reconciler passes.", labels, self.passes),
                ("cs_snapshot_created", "VolumeSnapshots created.", labels, self.totals.created),
                ("cs_snapshot_observed", "Snapshot status changes recorded.", labels,
                 self.totals.observed),
                ("cs_snapshot_deleted", "VolumeSnapshots deleted after GC.", labels,
                 self.totals.deleted),
                ("cs_snapshot_failures", "Snapshot actions that failed (retried).", labels,
                 self.totals.failures)]

    # --- background loop --------------------------------------------------------------------

    def start(self) -> SnapshotReconciler:
        self._stop.clear()
        try:
            self._watch = self.cluster.watch(None, self._on_change)
        except ClusterError as exc:  # the resync timer still converges
            log.warning("snapshot watch unavailable", extra={"error": str(exc)})
        self._thread = threading.Thread(target=self._loop, name="snapshot-reconciler",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()
        if self.signal is not None:
            self.signal.wake()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._watch is not None:
            self._watch.stop()
            self._watch = None

    def _on_change(self, change: Change) -> None:
        if change.kind == "volumesnapshots":
            self._changed.set()
            if self.signal is not None:
                self.signal.wake()

    def _loop(self) -> None:
        while not self._stop.is_set():
            seen = self.signal.head() if self.signal is not None else 0
            self._changed.clear()
            try:
                self.run_once()
            except Exception:
                log.exception("snapshot reconciler pass failed")
            self._stop.wait(self.min_gap)
            self._wait(seen)

    def _wait(self, seen: int) -> None:
        """Until the log moves past ``seen``, a VolumeSnapshot changes, or the resync is due."""
        deadline = time.monotonic() + self.interval
        while not self._stop.is_set() and not self._changed.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if self.signal is None:
                self._changed.wait(remaining)
                continue
            self.signal.wait_head(seen, min(remaining, 1.0))
            if self.signal.head() > seen:
                return
