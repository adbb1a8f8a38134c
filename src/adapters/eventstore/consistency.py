"""Read-your-writes: a read waits until the views it uses reach the log head as of its start.

Views run by this process are waited on through their runner (woken as each batch commits);
views run elsewhere are polled through their tracking rows.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from eventsourcing.postgres import PostgresTrackingRecorder

from context_service.adapters.eventstore.runner import ProjectionRunner
from context_service.adapters.eventstore.store import EventStore


class LogConsistency:
    def __init__(self, store: EventStore, tracking: PostgresTrackingRecorder,
                 runners: Mapping[str, ProjectionRunner]) -> None:
        self.store = store
        self.tracking = tracking
        self.runners = runners

    def wait(self, views: Sequence[str], timeout: float, head: int | None = None) -> bool:
        if head is None:
            head = self.store.head()
        deadline = time.monotonic() + timeout
        for view in views:
            runner = self.runners.get(view)
            remaining = deadline - time.monotonic()
            if runner is not None and runner.running:
                if not runner.wait_for(head, max(remaining, 0.0)):
                    return False
            elif not self._poll(view, head, deadline):
                return False
        return True

    def _poll(self, view: str, head: int, deadline: float) -> bool:
        delay = 0.001
        while (self.tracking.max_tracking_id(view) or 0) < head:
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.02)
        return True
