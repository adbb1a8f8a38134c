"""Sessions of the restricted login (spec 11.2 check 9, 11.5): the registration check and runs.

Each run: a pooled session (waiting for one counts against the timeout), a scope row bound to
that session's backend recorded on the service's login, then one pipeline: ``BEGIN READ ONLY``,
the statement timeout and the scope token set with ``set_config`` (bound), the statement
declared as a cursor with its values bound as the declared types, ``FETCH maxRows + 1``,
``ROLLBACK``. A client-side cancel fires at ``timeoutMs + 1000``. The answer goes out then; the
scope row is deleted and the session reset in its return step (``sessions.py``) before any other
run can have it; a run that failed, timed out or was cancelled closes it. Statement text always
goes through the extended protocol, which refuses more than one statement.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from eventsourcing.postgres import PostgresDatastore
from psycopg_pool import PoolTimeout

from context_service.adapters.postgres.sandbox.plan import plan_problem
from context_service.adapters.postgres.sandbox.scopes import Scopes
from context_service.adapters.postgres.sandbox.sessions import DRAIN_TIMEOUT_S, Sessions
from context_service.adapters.postgres.sandbox.values import (
    bound,
    declared,
    json_rows,
    register_bound,
)
from context_service.adapters.postgres.sandbox.watchdog import Watchdog
from context_service.domain.query_template.events import Parameter

CANCEL_GRACE_MS = 1000
CHECK_TIMEOUT_MS = 5000
TIMEOUT = "57014"  # query_canceled: statement_timeout or our cancel
LOST = "08006"  # connection_failure: the session ended without an error of the server


@dataclass
class RunResult:
    outcome: str  # ok, timeout or failed
    columns: list[dict[str, str]] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    truncated: bool = False
    sqlstate: str = ""
    message: str = ""  # the database's primary message, for ``failed``


_DECLARE = b"DECLARE cs_run NO SCROLL CURSOR FOR "


def _prepare(parameters: tuple[Parameter, ...], statement: str) -> bytes:
    types = declared(parameters)
    head = f"PREPARE cs_template({types}) AS " if types else "PREPARE cs_template AS "
    return (head + statement).encode()


class TemplateSandbox:
    """Runs statements on the restricted login; ``problem`` is the start-up check's finding."""

    def __init__(self, datastore: PostgresDatastore, conninfo: str, problem: str | None,
                 sessions: Sessions | None = None,
                 scopes: Scopes | None = None) -> None:
        self.datastore = datastore
        self.conninfo = conninfo
        self.problem = problem
        self._sessions = sessions
        self._scopes = scopes
        self._types: dict[tuple[int, int], str] = {}
        self._watchdog = Watchdog()

    def close(self, drain_s: float = DRAIN_TIMEOUT_S) -> None:
        # the sessions first (their pending return steps delete their rows, for up to
        # ``drain_s``), then any row this process recorded and did not delete: a clean stop
        # leaves no scope row behind
        if self._sessions is not None:
            self._sessions.close(drain_s)
        if self._scopes is not None:
            self._scopes.close()

    def ready(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Wait until every session of the pool is open (benchmarks and tests)."""
        if self._sessions is not None:
            self._sessions.ready(timeout_s)

    def settle(self, timeout_s: float = DRAIN_TIMEOUT_S) -> bool:
        """Wait until the return steps under way have finished (benchmarks and tests)."""
        return self._sessions is None or self._sessions.settle(timeout_s)

    def _connect(self) -> psycopg.Connection[Any]:
        # ``prepare=True`` below needs psycopg's preparing: ``PREPARE ... AS <statement>`` goes
        # through Parse, which refuses more than one statement
        conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5,
                               cursor_factory=psycopg.RawCursor)
        register_bound(conn.adapters)
        return conn

    def check(self, statement: str, parameters: tuple[Parameter, ...]) -> str | None:
        """Check 9, on a fresh session: the database's primary message, a plan refusal, or
        None."""
        with self._connect() as conn:
            try:
                conn.execute("BEGIN READ ONLY")
                conn.execute(f"SET LOCAL statement_timeout = {CHECK_TIMEOUT_MS}")
                conn.execute("SELECT set_config('cs.agent_scope', $1, true)",
                             [secrets.token_urlsafe(32)])
                conn.execute(_prepare(parameters, statement), prepare=True)
                conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
                nulls = ", ".join("NULL" for _ in parameters)
                row = conn.execute(
                    "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE cs_template"
                    + (f"({nulls})" if parameters else "")).fetchone()
            except psycopg.Error as exc:
                return _primary(exc)
            finally:
                _rollback(conn)
        assert row is not None
        plan = row[0] if not isinstance(row[0], str) else json.loads(row[0])
        return plan_problem(plan)

    def run(self, statement: str, parameters: tuple[Parameter, ...], values: Sequence[Any],
            namespace: str, collections: Sequence[str], timeout_ms: int,
            max_rows: int) -> RunResult:
        assert self._sessions is not None and self._scopes is not None, self.problem
        started = time.monotonic()
        try:
            conn = self._sessions.take(timeout_ms / 1000)
        except PoolTimeout:
            return RunResult("timeout", sqlstate=TIMEOUT)
        clean = False
        try:
            remaining = timeout_ms - int((time.monotonic() - started) * 1000)
            if remaining < 1:
                clean = True
                return RunResult("timeout", sqlstate=TIMEOUT)
            # bound to this session's backend: the token opens nothing on any other session,
            # and the return step deletes the row before this one serves another run
            token = self._scopes.record(namespace, collections, timeout_ms,
                                        conn.info.backend_pid)
            result, clean = self._execute(
                conn, statement, parameters, values, token, remaining, max_rows,
                started + (timeout_ms + CANCEL_GRACE_MS) / 1000)
            return result
        finally:
            self._sessions.give_back(conn, clean)

    def _execute(self, conn: psycopg.Connection[Any], statement: str,
                 parameters: tuple[Parameter, ...], values: Sequence[Any], token: str,
                 remaining_ms: int, max_rows: int, deadline: float) -> tuple[RunResult, bool]:
        """The run's pipeline on ``conn``; the result and whether the session is clean."""
        cancelled = threading.Event()

        def cancel() -> None:
            cancelled.set()
            conn.cancel_safe(timeout=1.0)

        alarm = self._watchdog.arm(deadline, cancel)
        try:
            fetch = conn.cursor()
            # one round trip; the statement is the query of a cursor, so the server computes
            # no more than the maxRows + 1 rows fetched, and its description comes with them
            with conn.pipeline():
                conn.execute("BEGIN READ ONLY")
                conn.execute("SELECT set_config('statement_timeout', $1, true),"
                             " set_config('cs.agent_scope', $2, true)",
                             [str(int(remaining_ms)), token])
                conn.execute(_DECLARE + statement.encode(), bound(parameters, values))
                fetch.execute(f"FETCH FORWARD {int(max_rows) + 1} FROM cs_run")
                conn.execute("ROLLBACK")
            if cancelled.is_set():
                return RunResult("timeout", sqlstate=TIMEOUT), False
            result = fetch.pgresult
            oids = [result.ftype(i) for i in range(result.nfields)] if result else []
            rows = json_rows(fetch.fetchall(), oids)
            columns = self._columns(fetch)
            return RunResult("ok", columns, rows[:max_rows], len(rows) > max_rows), True
        except psycopg.Error as exc:
            if cancelled.is_set() or exc.sqlstate == TIMEOUT:
                return RunResult("timeout", sqlstate=TIMEOUT), False
            return RunResult("failed", sqlstate=exc.sqlstate or LOST,
                             message=_primary(exc)), False
        finally:
            self._watchdog.disarm(alarm)

    def _columns(self, cur: psycopg.Cursor[Any]) -> list[dict[str, str]]:
        result = cur.pgresult
        return [] if result is None else self._fields(result)

    def _fields(self, result: Any) -> list[dict[str, str]]:
        out = []
        for i in range(result.nfields):
            key = (result.ftype(i), result.fmod(i))
            if key not in self._types:
                self._types[key] = self._type_name(*key)
            name = result.fname(i)
            out.append({"name": name.decode() if name is not None else "",
                        "type": self._types[key]})
        return out

    def _type_name(self, oid: int, modifier: int) -> str:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT format_type(%s, %s) AS t", (oid, modifier if modifier >= 0
                                                            else None))
            row = cur.fetchone()
        return str(row["t"]) if row is not None else "unknown"


def _rollback(conn: psycopg.Connection[Any]) -> None:
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error:
        conn.close()  # a session that cannot roll back is ended: nothing is committed


def _primary(exc: psycopg.Error) -> str:
    """The database's primary message only (never the detail, hint, context or position)."""
    primary = exc.diag.message_primary if exc.diag is not None else None
    return primary or type(exc).__name__
