"""Leadership through a PostgreSQL session advisory lock: one active instance per worker.

The holder keeps a dedicated connection open; when its process dies the connection closes, the
lock is released, and a standby's next ``try_acquire`` succeeds.
"""

from __future__ import annotations

import hashlib

import psycopg


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
