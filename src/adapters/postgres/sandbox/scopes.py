"""Scope rows of template runs (spec 11.5), recorded on the service's login: one statement to
record a run's row (deleting expired ones with it), one to delete it after the run.

Each is a single autocommit statement with ``synchronous_commit = off``: a committed row is
visible to the restricted sessions at once; only its durability across a crash is deferred, and
a row a crash brings back has expired by then.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

SCOPE_GRACE_MS = 5000
_RECORD = ("WITH expired AS (DELETE FROM agent_data.scopes WHERE expires_at < now())"
           " INSERT INTO agent_data.scopes (token, namespace, collections, expires_at)"
           " VALUES (%s, %s, %s, now() + make_interval(secs => %s))")


class Scopes:
    def __init__(self, service_url: str, size: int) -> None:
        self._pool: ConnectionPool[Any] = ConnectionPool(
            service_url, min_size=1, max_size=size, name="agent-query-scopes", open=False,
            configure=_configure, kwargs={"autocommit": True})
        self._pool.open(wait=False)

    def record(self, namespace: str, collections: Sequence[str], timeout_ms: int) -> str:
        token = secrets.token_urlsafe(32)  # 32 random bytes, 43 base64url characters
        with self._pool.connection() as conn:
            conn.execute(_RECORD, (token, namespace.encode("utf-8", "surrogatepass"),
                                   list(collections), (timeout_ms + SCOPE_GRACE_MS) / 1000))
        return token

    def delete(self, token: str) -> None:
        with self._pool.connection() as conn:
            conn.execute("DELETE FROM agent_data.scopes WHERE token = %s", (token,))

    def close(self) -> None:
        self._pool.close()


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.execute("SET synchronous_commit = off")
