"""The batched projection runner.

Each batch (a page of the log) is applied and tracked in one transaction, so a view never holds
half a batch and a re-delivered position fails the tracking insert and changes nothing. When
caught up the runner sleeps until the log head moves (LISTEN/NOTIFY or a local append).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from eventsourcing.persistence import Tracking
from eventsourcing.postgres import PostgresTrackingRecorder

from src.adapters.eventstore.store import EventStore
from src.projections.base import Projection

log = logging.getLogger(__name__)
ViewFactory = Callable[[Any], Any]
Progress = Callable[[int, int], None]


class ProjectionRunner:
    def __init__(self, store: EventStore, tracking: PostgresTrackingRecorder,
                 projection: Projection, view: ViewFactory, batch_size: int = 2000) -> None:
        self.store = store
        self.tracking = tracking
        self.projection = projection
        self.view = view
        self.batch_size = batch_size
        self.name = projection.name
        self._position = tracking.max_tracking_id(self.name) or 0
        self._changed = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def position(self) -> int:
        return self._position

    def run_once(self) -> int:
        """Apply the next page of the log; return the number of events applied."""
        batch = self.store.read(self._position, self.batch_size)
        if not batch:
            return 0
        last = batch[-1].position
        with self.store.datastore.transaction(commit=True) as cur:
            self.projection.apply(self.view(cur), batch)
            self.tracking._insert_tracking(cur, Tracking(self.name, last))
        self._advance(last)
        return len(batch)

    def catch_up(self, progress: Progress | None = None) -> int:
        head = self.store.head()
        total = 0
        while self._position < head:
            applied = self.run_once()
            if applied == 0:
                break
            total += applied
            if progress is not None:
                progress(self._position, head)
        return total

    def rebuild(self, progress: Progress | None = None) -> int:
        """Empty the view and its tracking row, then replay the log from position zero."""
        with self.store.datastore.transaction(commit=True) as cur:
            for table in self.projection.tables:
                cur.execute(f"TRUNCATE {table}")
            cur.execute(f"DELETE FROM {self.tracking.tracking_table_name} "
                        "WHERE application_name = %s", (self.name,))
        with self._changed:
            self._position = 0
        return self.catch_up(progress)

    def wait_for(self, position: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._position < position:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return True

    def _advance(self, position: int) -> None:
        with self._changed:
            self._position = position
            self._changed.notify_all()

    # --- background loop ------------------------------------------------------------------------

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name=f"projection-{self.name}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.store.wake()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self.run_once() == 0:
                    self.store.wait_head(self._position, timeout=1.0)
            except Exception:
                log.exception("projection batch failed", extra={"projection": self.name})
                self._position = self.tracking.max_tracking_id(self.name) or 0
                self._stop.wait(0.5)
