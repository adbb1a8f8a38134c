"""Scope rows of template runs (spec 11.5), recorded on the service's login and bound to the
backend of the restricted session that runs them: one statement records a run's row, one
deletes the rows of a session (and every expired row) before it serves anything else.

Each is a single autocommit statement with ``synchronous_commit = off``: a committed row is
visible to the restricted sessions at once; only its durability across a crash is deferred, and
a row a crash brings back has expired by then (and its backend is gone).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Sequence
from typing import Any

import psycopg

from context_service.adapters.postgres.sandbox.lifo import LifoPool

SCOPE_GRACE_MS = 5000
_RECORD = ("INSERT INTO agent_data.scopes (token, namespace, collections, expires_at,"
           " backend_pid) VALUES (%s, %s, %s, now() + make_interval(secs => %s), %s)")
# the return step's: this backend's rows, and any expired row (one whose deletion failed)
_RELEASE = "DELETE FROM agent_data.scopes WHERE backend_pid = %s OR expires_at < now()"
# Safe with several service processes on one database: an expired row opens nothing, and a row
# whose backend has ended can never match a session again (only a later backend that reused the
# pid could, which is what deleting it prevents). A live process's live rows are kept.
DEAD = ("DELETE FROM agent_data.scopes s WHERE s.expires_at < now() OR s.backend_pid IS NULL"
        " OR NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a WHERE a.pid = s.backend_pid)")


class Scopes:
    def __init__(self, service_url: str, size: int) -> None:
        self._pool = LifoPool(
            service_url, min_size=1, max_size=size, name="agent-query-scopes", open=False,
            configure=_configure, kwargs={"autocommit": True})
        self._pool.open(wait=False)
        self._lock = threading.Lock()
        self._live: dict[str, int] = {}  # token -> backend pid: rows recorded, not yet deleted

    def clear_dead(self) -> int:
        """Delete the rows no session can use any more (start-up); how many."""
        with self._pool.connection() as conn:
            return int(conn.execute(DEAD).rowcount)

    def record(self, namespace: str, collections: Sequence[str], timeout_ms: int,
               backend_pid: int) -> str:
        token = secrets.token_urlsafe(32)  # 32 random bytes, 43 base64url characters
        with self._lock:
            self._live[token] = backend_pid  # before the insert: close() deletes it either way
        with self._pool.connection() as conn:
            conn.execute(_RECORD, (token, namespace.encode("utf-8", "surrogatepass"),
                                   list(collections), (timeout_ms + SCOPE_GRACE_MS) / 1000,
                                   backend_pid))
        return token

    def release(self, backend_pid: int) -> None:
        """Delete every row bound to ``backend_pid``; raises when it could not."""
        with self._pool.connection() as conn:
            conn.execute(_RELEASE, (backend_pid,))
        with self._lock:
            for token in [t for t, pid in self._live.items() if pid == backend_pid]:
                del self._live[token]

    def close(self) -> None:
        """Delete the rows still recorded by this process (a clean stop leaves none), then
        close the pool."""
        with self._lock:
            tokens = list(self._live)
        try:
            if tokens:
                with self._pool.connection(timeout=5) as conn:
                    conn.execute("DELETE FROM agent_data.scopes WHERE token = ANY(%s)",
                                 (tokens,))
                with self._lock:
                    for token in tokens:
                        self._live.pop(token, None)
        finally:
            self._pool.close()

    @property
    def pending(self) -> int:
        """Rows recorded by this process and not yet deleted."""
        with self._lock:
            return len(self._live)


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SET synchronous_commit = off")
