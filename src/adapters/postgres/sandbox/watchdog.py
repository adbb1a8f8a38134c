"""One thread that cancels the statements of runs past their deadline (spec 11.5: the service
cancels a statement that has not returned ``timeoutMs + 1000`` ms after it started), instead of
a timer thread started for every run."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable


class Watchdog:
    def __init__(self) -> None:
        self._due: list[tuple[float, int, Callable[[], None]]] = []
        self._armed: set[int] = set()
        self._ids = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, action: Callable[[], None]) -> int:
        """Call ``action`` at ``deadline`` (``time.monotonic``) unless disarmed first."""
        with self._wake:
            handle = next(self._ids)
            heapq.heappush(self._due, (deadline, handle, action))
            self._armed.add(handle)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="agent-query-watchdog",
                                                daemon=True)
                self._thread.start()
            elif self._due[0][1] == handle:
                self._wake.notify()
        return handle

    def disarm(self, handle: int) -> None:
        with self._wake:
            self._armed.discard(handle)

    def _loop(self) -> None:
        while True:
            with self._wake:
                while self._due and self._due[0][1] not in self._armed:
                    heapq.heappop(self._due)  # disarmed: dropped lazily
                wait = self._due[0][0] - time.monotonic() if self._due else None
                if wait is None or wait > 0:
                    self._wake.wait(wait)
                    continue
                _, handle, action = heapq.heappop(self._due)
                self._armed.discard(handle)
            action()  # outside the lock: a cancel takes a round trip
