"""The pool of pre-opened sessions of the restricted login (issue 12), sized by
``CS_AGENT_QUERY_CONNECTIONS``. A session is made available again only by its return step, in
the pool's worker after the answer: the scope rows bound to its backend are deleted FIRST, then
``DISCARD ALL``, then a check that it shows the login's pristine state; if any step fails the
pool closes the session and opens a new one. A run that was not clean closes its session at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import pq

from context_service.adapters.postgres.sandbox.lifo import LifoPool
from context_service.adapters.postgres.sandbox.values import register_bound

CONNECT_TIMEOUT_S = 5
DRAIN_TIMEOUT_S = 5.0
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
    """A session of the restricted login that does not show its pristine state."""


class Sessions:
    def __init__(self, conninfo: str, role: str, size: int,
                 release: Callable[[int], None]) -> None:
        """``release(backend_pid)`` deletes the scope rows bound to a backend, or raises."""
        self.identity: tuple[Any, ...] = (role, role, "agent", "on", "10s", "")
        self._release = release
        self._out = 0  # sessions taken whose return step has not finished
        self._returned = threading.Condition()
        self._pool = LifoPool(  # the session put back last is taken first: it is warm
            conninfo, min_size=size, max_size=size, name="agent-query", open=False,
            configure=self._configure, reset=self._return_step, reconnect_timeout=60,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S,
                    "cursor_factory": psycopg.RawCursor,
                    "prepare_threshold": None})  # nothing of ours is prepared server-side
        self._pool.open(wait=False)  # the sessions open in the background

    def _reset(self, conn: psycopg.Connection[Any]) -> tuple[Any, ...] | None:
        """``DISCARD ALL``, then the identity and settings the session shows."""
        conn.execute(RESET)
        row = conn.execute(IDENTITY).fetchone()
        return None if row is None else tuple(row)

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        register_bound(conn.adapters)
        identity = self._reset(conn)
        leftovers = conn.execute(LEFTOVERS).fetchone()
        if identity != self.identity or leftovers != (0,):
            raise UncleanSession(f"a new session is not in its pristine state: {identity}")

    def _return_step(self, conn: psycopg.Connection[Any]) -> None:
        """The pool's reset (its worker, after ``putconn``): a raise makes the pool close it."""
        try:
            self._release(conn.info.backend_pid)  # first: nothing else runs while rows live
            identity = self._reset(conn)
            if identity != self.identity:
                raise UncleanSession(f"a returned session did not reset: {identity}")
        finally:
            self._returned_one()

    def _returned_one(self) -> None:
        with self._returned:
            self._out -= 1
            self._returned.notify_all()

    def take(self, timeout_s: float) -> psycopg.Connection[Any]:
        """A session; raises ``psycopg_pool.PoolTimeout`` when none is free in time."""
        conn: psycopg.Connection[Any] = self._pool.getconn(timeout=timeout_s)
        with self._returned:
            self._out += 1
        return conn

    def give_back(self, conn: psycopg.Connection[Any], clean: bool) -> None:
        """A clean session (idle after its run) goes through the return step; any other is
        closed now and its rows deleted by ``release`` (an error is left to their expiry)."""
        if clean and conn.pgconn.transaction_status == pq.TransactionStatus.IDLE:
            self._pool.putconn(conn)  # the pool runs _return_step before anyone gets it
            return
        pid = conn.info.backend_pid
        conn.close()  # never reused: the pool opens a new session in its place
        try:
            self._release(pid)
        except psycopg.Error:
            pass  # bound to a backend that has ended: it matches nothing and expires
        finally:
            self._pool.putconn(conn)
            self._returned_one()

    def ready(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Wait until every session of the pool is open (benchmarks and tests)."""
        self._pool.wait(timeout_s)

    def settle(self, timeout_s: float = DRAIN_TIMEOUT_S) -> bool:
        """Wait until every session taken has been through its return step; whether they
        all have."""
        with self._returned:
            return self._returned.wait_for(lambda: self._out <= 0, timeout_s)

    def close(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Wait for the return steps under way (so their rows are deleted), then close."""
        self.settle(timeout_s)
        self._pool.close(timeout=timeout_s)  # a worker stuck in a return step is not waited for
