"""Leadership through a PostgreSQL session advisory lock: one active instance per worker.

The holder keeps a dedicated connection open; when its process dies the connection closes, the
lock is released, and a standby's next ``try_acquire`` succeeds.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol

import psycopg

log = logging.getLogger(__name__)


def lock_key(name: str) -> int:
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


class LeaderLock:
    def __init__(self, url: str, name: str) -> None:
        self.url = url
        self.name = name
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None

    @property
    def held(self) -> bool:
        return self._conn is not None and not self._conn.closed

    def try_acquire(self) -> bool:
        if self.held:
            return True
        conn = psycopg.connect(self.url, autocommit=True)
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", (lock_key(self.name),)).fetchone()
        if row is not None and row[0] is True:
            self._conn = conn
            return True
        conn.close()
        return False

    def release(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class Stoppable(Protocol):
    def stop(self) -> None: ...


class LeaderWorker:
    """Run a worker only while holding its advisory lock; otherwise stand by and retry.

    The holder checks its lock's session every ``interval`` seconds; a lost session stops the
    worker, which then competes for the lock again like any standby.
    """

    def __init__(self, url: str, name: str, start: Callable[[], Stoppable],
                 interval: float = 2.0) -> None:
        self.lock = LeaderLock(url, name)
        self.name = name
        self._start = start
        self.interval = interval
        self.worker: Stoppable | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def active(self) -> bool:
        return self.worker is not None

    def start(self) -> LeaderWorker:
        """Take the lock now if it is free (the usual case: the worker runs before the caller
        goes on), then keep watching it from a thread."""
        if self.lock.try_acquire():
            self.worker = self._start()
            log.info("worker active", extra={"worker": self.name})
        self._thread = threading.Thread(target=self._run, name=f"leader-{self.name}",
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        announced = False
        while not self._stop.is_set():
            try:
                if self.worker is None and self.lock.try_acquire():
                    self.worker = self._start()
                    log.info("worker active", extra={"worker": self.name})
                elif self.worker is None and not announced:
                    log.info("standing by: another instance is active",
                             extra={"worker": self.name})
                    announced = True
                elif self.worker is not None and not self._holding():
                    log.warning("lost leadership", extra={"worker": self.name})
                    self._stand_down()
            except Exception:
                log.exception("worker leadership check failed", extra={"worker": self.name})
            self._stop.wait(self.interval)

    def _holding(self) -> bool:
        conn = self.lock._conn
        try:
            return conn is not None and conn.execute("SELECT 1").fetchone() is not None
        except psycopg.Error:
            return False

    def _stand_down(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        self.lock.release()

    def gauges(self) -> list[Any]:
        found: list[Any] = getattr(self.worker, "gauges", list)()
        return found

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        self._stand_down()
