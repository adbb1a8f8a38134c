"""The batched projection runner: each page of the log is applied to every projection of a
group, and their tracking rows advance in the same transaction (``synchronous_commit = off``),
only from the positions the rows hold (compare and set): a runner whose memory disagrees with
them (another instance moved them, a crash lost batches it had committed) changes nothing and
reads them again. When caught up it sleeps until the log head moves."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from eventsourcing.persistence import IntegrityError
from eventsourcing.postgres import PostgresTrackingRecorder

from context_service.adapters.eventstore.store import EventStore
from context_service.domain.stream import Recorded
from context_service.projections.base import Projection

log = logging.getLogger(__name__)
ViewFactory = Callable[[Any], Any]
Progress = Callable[[int, int], None]
RETRY_INITIAL, RETRY_MAX = 0.5, 5.0  # seconds between attempts at a failing batch (as the relay)


class Listener(Protocol):
    """An in-memory read model fed by the runner: ``applied`` after each committed batch
    (before waiters see the new position), ``reset`` whenever the runner re-reads its positions
    (another instance may have applied events it never saw)."""

    def applied(self, batch: Sequence[Recorded]) -> None: ...

    def reset(self) -> None: ...


class ProjectionRunner:
    def __init__(self, store: EventStore, tracking: PostgresTrackingRecorder,
                 projections: Sequence[tuple[Projection, ViewFactory]],
                 batch_size: int = 2000, linger: float = 0.008, busy: int = 4,
                 listeners: Sequence[Listener] = ()) -> None:
        self.store = store
        self.listeners = list(listeners)
        self.linger = linger
        self.busy = busy
        self.tracking = tracking
        self.projections = list(projections)
        self.batch_size = batch_size
        self.names = [p.name for p, _ in self.projections]
        self._positions: dict[str, int] = {}
        self._changed = threading.Condition()
        self.refresh()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> None:
        """Read the tracked positions again (another instance may have moved them)."""
        with self._changed:
            self._positions = {n: self.tracking.max_tracking_id(n) or 0 for n in self.names}
            for listener in self.listeners:
                listener.reset()

    @property
    def position(self) -> int:
        """The position every projection of the group has reached."""
        return min(self._positions.values())

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def position_of(self, name: str) -> int:
        return self._positions[name]

    def run_once(self) -> int:
        """Apply the next page of the log; return the number of events read."""
        batch = self.store.read(self.position, self.batch_size)
        if batch:
            self._apply(batch)
        return len(batch)

    def _apply(self, batch: Sequence[Recorded]) -> None:
        """Apply one page (which starts right after ``position``) and advance the tracking."""
        start = self.position
        last = batch[-1].position
        with self.store.datastore.transaction(commit=True) as cur:
            cur.execute("SET LOCAL synchronous_commit = off")
            tracked = []
            for projection, view in self.projections:
                done = self._positions[projection.name]
                todo = batch if done <= start else [r for r in batch if r.position > done]
                if todo:
                    projection.apply(view(cur), todo)
                    tracked.append(projection.name)
            self._track(cur, tracked, last)
        for listener in self.listeners:
            listener.applied(batch)
        with self._changed:
            for name in self.names:
                self._positions[name] = max(self._positions[name], last)
            self._changed.notify_all()

    def _track(self, cur: Any, names: list[str], position: int) -> None:
        """Advance every named projection's tracking row to ``position`` in one statement,
        from exactly the position this runner applied it to: a row anywhere else (another
        instance moved it, or the database lost batches this runner remembers committing)
        fails the whole batch, and the runner reads its positions again."""
        if not names:
            return
        table = self.tracking.tracking_table_name
        expected = [self._positions[n] for n in names]
        cur.execute(
            f"WITH want(n, was) AS (SELECT * FROM unnest(%b::text[], %b::int8[])),"
            f" moved AS (UPDATE {table} t SET notification_id = %b::int8 FROM want"
            "  WHERE t.application_name = want.n AND t.notification_id = want.was"
            "  RETURNING t.application_name),"
            f" added AS (INSERT INTO {table} (application_name, notification_id)"
            "  SELECT n, %b::int8 FROM want WHERE was = 0"
            "  ON CONFLICT (application_name) DO NOTHING RETURNING application_name)"
            " SELECT application_name FROM moved UNION ALL SELECT application_name FROM added",
            (names, expected, position, position))
        if len(cur.fetchall()) != len(names):
            raise IntegrityError(f"tracking of {names} is no longer at {expected}: "
                                 f"batch up to {position} refused")

    def catch_up(self, progress: Progress | None = None) -> int:
        """Apply the log up to its current head. The next page is read (and decoded) on another
        connection while this one is applied, so reading overlaps writing."""
        self.refresh()
        head = self.store.head()
        total = 0
        with ThreadPoolExecutor(1, thread_name_prefix="prefetch") as pool:
            ahead = pool.submit(self.store.read, self.position, self.batch_size)
            while self.position < head:
                batch = ahead.result()
                if not batch:
                    break
                ahead = pool.submit(self.store.read, batch[-1].position, self.batch_size)
                self._apply(batch)
                total += len(batch)
                if progress is not None:
                    progress(self.position, head)
        return total

    def rebuild(self, progress: Progress | None = None) -> int:
        """Empty the views and their tracking rows, then replay the log from position zero."""
        with self.store.datastore.transaction(commit=True) as cur:
            for projection, _ in self.projections:
                for table in projection.tables:
                    cur.execute(f"TRUNCATE {table}")
                cur.execute(f"DELETE FROM {self.tracking.tracking_table_name} "
                            "WHERE application_name = %s", (projection.name,))
        with self._changed:
            self._positions = dict.fromkeys(self.names, 0)
            for listener in self.listeners:
                listener.reset()
        return self.catch_up(progress)

    def wait_for(self, position: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while self.position < position:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    # --- background loop ------------------------------------------------------------------------

    def start(self) -> None:
        # a stop event per loop: a loop that outlived its stop (a batch longer than the stop's
        # time-out) ends after that batch, and is never revived next to this one
        self._stop = stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(stop,), daemon=True,
                                        name="projections-" + "+".join(self.names))
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self.store.wake()
        if self._thread is not None:
            self._thread.join(timeout=timeout)
            self._thread = None

    def _loop(self, stop: threading.Event) -> None:
        failures = 0
        while not stop.is_set():
            try:
                read = self.run_once()
                failures = 0
                if read == 0:
                    self.store.wait_head(self.position, timeout=1.0, stop=stop)
                elif self.busy <= read < self.batch_size:
                    # a busy log: let the next batch fill a little (fewer, larger transactions)
                    stop.wait(self.linger)
            except Exception:
                # a batch that keeps failing (an event a view cannot take, a database away) is
                # read and logged again after a pause that doubles up to RETRY_MAX, not twice a
                # second for ever
                pause = min(RETRY_INITIAL * 2 ** failures, RETRY_MAX)
                failures += 1
                log.exception("projection batch failed", extra={
                    "projections": self.names, "failures": failures, "retry_seconds": pause})
                stop.wait(pause)
                with contextlib.suppress(Exception):  # the database may still be away
                    self.refresh()
