"""The pool of pre-opened sessions of the restricted login (issue 12), sized by
``CS_AGENT_QUERY_CONNECTIONS``. A session goes back only when its run rolled back cleanly and
its reset (``DISCARD ALL``, sent in the run's own pipeline) left the login's pristine state;
any other session is closed and the pool opens a new one in its place."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import pq
from psycopg_pool import ConnectionPool

from context_service.adapters.postgres.sandbox.values import register_bound

CONNECT_TIMEOUT_S = 5
# DISCARD ALL: CLOSE ALL, SET SESSION AUTHORIZATION DEFAULT, RESET ALL, DEALLOCATE ALL,
# UNLISTEN *, pg_advisory_unlock_all(), DISCARD PLANS, DISCARD TEMP, DISCARD SEQUENCES
RESET = "DISCARD ALL"
# the identity and settings a clean session shows between runs: checked after every reset
IDENTITY = ("SELECT session_user::text, current_user::text, current_setting('search_path'),"
            " current_setting('default_transaction_read_only'),"
            " current_setting('statement_timeout'),"
            " coalesce(current_setting('cs.agent_scope', true), '')")
# what DISCARD ALL itself guarantees: checked when a session opens (and by the tests)
LEFTOVERS = ("SELECT (SELECT count(*) FROM pg_catalog.pg_prepared_statements)"
             " + (SELECT count(*) FROM pg_catalog.pg_cursors WHERE name <> '')"  # not this one
             " + (SELECT count(*) FROM pg_catalog.pg_listening_channels())"
             " + (SELECT count(*) FROM pg_catalog.pg_locks WHERE pid = pg_backend_pid()"
             "    AND locktype = 'advisory')"
             " + (SELECT count(*) FROM pg_catalog.pg_class"
             "    WHERE relnamespace = pg_catalog.pg_my_temp_schema())")


class UncleanSession(Exception):
    """A new session of the restricted login that does not show its pristine state."""


class Sessions:
    def __init__(self, conninfo: str, role: str, size: int) -> None:
        self.identity: tuple[Any, ...] = (role, role, "agent", "on", "10s", "")
        self._pool: ConnectionPool[Any] = ConnectionPool(
            conninfo, min_size=size, max_size=size, name="agent-query", open=False,
            configure=self._configure, reconnect_timeout=60,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S,
                    "cursor_factory": psycopg.RawCursor,
                    "prepare_threshold": None})  # nothing of ours is prepared server-side
        self._pool.open(wait=False)  # the sessions open in the background

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        register_bound(conn.adapters)
        conn.execute(RESET)
        identity = conn.execute(IDENTITY).fetchone()
        leftovers = conn.execute(LEFTOVERS).fetchone()
        if identity is None or tuple(identity) != self.identity or leftovers != (0,):
            raise UncleanSession(f"a new session is not in its pristine state: {identity}")

    def take(self, timeout_s: float) -> psycopg.Connection[Any]:
        """A session; raises ``psycopg_pool.PoolTimeout`` when none is free in time."""
        conn: psycopg.Connection[Any] = self._pool.getconn(timeout=timeout_s)
        return conn

    def reset(self, conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
        """Queue the reset and the identity check (in the caller's pipeline)."""
        conn.execute(RESET)
        return conn.execute(IDENTITY)

    def is_clean(self, conn: psycopg.Connection[Any], state: psycopg.Cursor[Any]) -> bool:
        if conn.pgconn.transaction_status != pq.TransactionStatus.IDLE:
            return False
        row = state.fetchone()
        return row is not None and tuple(row) == self.identity

    def give_back(self, conn: psycopg.Connection[Any], clean: bool) -> None:
        if not clean:
            conn.close()  # never reused: the pool opens a new session in its place
        self._pool.putconn(conn)

    def close(self) -> None:
        self._pool.close()
