"""Sessions of the restricted login (spec 11.2 check 9, 11.5): the registration check and runs.

Each run: a slot (waiting counts against the timeout), a scope row recorded on the service's
login, a new session, ``BEGIN READ ONLY``, ``SET LOCAL statement_timeout``, the scope token set
with ``set_config`` (bound), the statement executed with its values bound as the declared
types, at most ``maxRows + 1`` rows read, ``ROLLBACK``, close; a client-side cancel fires at
``timeoutMs + 1000``. Statement text always goes through the extended protocol, which refuses
more than one statement.
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
from psycopg import pq

from context_service.adapters.postgres.sandbox.plan import plan_problem
from context_service.adapters.postgres.sandbox.values import (
    bound,
    declared,
    json_value,
    oids,
    register_bound,
)
from context_service.domain.query_template.events import Parameter

SCOPE_GRACE_MS = 5000
CANCEL_GRACE_MS = 1000
CHECK_TIMEOUT_MS = 5000
TIMEOUT = "57014"  # query_canceled: statement_timeout or our cancel
NO_ROWS = "0A000"  # feature_not_supported: a statement that is not a query
LOST = "08006"  # connection_failure: the session ended without an error of the server


@dataclass
class RunResult:
    outcome: str  # ok, timeout or failed
    columns: list[dict[str, str]] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    truncated: bool = False
    sqlstate: str = ""
    message: str = ""  # the database's primary message, for ``failed``


def _prepare(parameters: tuple[Parameter, ...], statement: str) -> bytes:
    types = declared(parameters)
    head = f"PREPARE cs_template({types}) AS " if types else "PREPARE cs_template AS "
    return (head + statement).encode()


class TemplateSandbox:
    """Runs statements on the restricted login; ``problem`` is the start-up check's finding."""

    def __init__(self, datastore: PostgresDatastore, conninfo: str, slots: int,
                 problem: str | None) -> None:
        self.datastore = datastore
        self.conninfo = conninfo
        self.problem = problem
        self._slots = threading.BoundedSemaphore(slots)
        self._types: dict[tuple[int, int], str] = {}

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5,
                               cursor_factory=psycopg.RawCursor)
        register_bound(conn.adapters)
        return conn

    def check(self, statement: str, parameters: tuple[Parameter, ...]) -> str | None:
        """Check 9: the database's primary message, a plan refusal, or None."""
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
        started = time.monotonic()
        if not self._slots.acquire(timeout=timeout_ms / 1000):
            return RunResult("timeout", sqlstate=TIMEOUT)
        try:
            remaining = timeout_ms - int((time.monotonic() - started) * 1000)
            if remaining < 1:
                return RunResult("timeout", sqlstate=TIMEOUT)
            token = self._scope(namespace, collections, timeout_ms)
            try:
                return self._session(statement, parameters, values, token, remaining,
                                     max_rows, started + (timeout_ms + CANCEL_GRACE_MS) / 1000)
            finally:
                self._unscope(token)
        finally:
            self._slots.release()

    def _scope(self, namespace: str, collections: Sequence[str], timeout_ms: int) -> str:
        token = secrets.token_urlsafe(32)  # 32 random bytes, 43 base64url characters
        with self.datastore.transaction(commit=True) as cur:
            cur.execute("INSERT INTO agent_data.scopes (token, namespace, collections,"
                        " expires_at) VALUES (%s, %s, %s, now() + make_interval(secs => %s))",
                        (token, namespace.encode("utf-8", "surrogatepass"), list(collections),
                         (timeout_ms + SCOPE_GRACE_MS) / 1000))
        return token

    def _unscope(self, token: str) -> None:
        with self.datastore.transaction(commit=True) as cur:
            cur.execute("DELETE FROM agent_data.scopes WHERE token = %s OR expires_at < now()",
                        (token,))

    def _session(self, statement: str, parameters: tuple[Parameter, ...],
                 values: Sequence[Any], token: str, remaining_ms: int, max_rows: int,
                 deadline: float) -> RunResult:
        conn = self._connect()
        cancelled = threading.Event()

        def cancel() -> None:
            cancelled.set()
            conn.cancel_safe(timeout=1.0)

        timer = threading.Timer(max(0.0, deadline - time.monotonic()), cancel)
        timer.daemon = True
        timer.start()
        try:
            conn.execute("BEGIN READ ONLY")
            conn.execute(f"SET LOCAL statement_timeout = {int(remaining_ms)}")
            conn.execute("SELECT set_config('cs.agent_scope', $1, true)", [token])
            cur = conn.cursor()
            rows: list[list[Any]] = []
            # the extended protocol: one statement only, its parameters typed as declared
            columns: list[dict[str, str]] | None = None
            for row in cur.stream(statement, bound(parameters, values)):
                if columns is None:  # the description of single-row results
                    columns = self._columns(cur)
                rows.append([json_value(v) for v in row])
                if len(rows) > max_rows:
                    break
            if columns is None:  # no rows: the statement's description, without running it
                columns = self._described(conn, statement, parameters)
            truncated = len(rows) > max_rows
            _rollback(conn)
            if cancelled.is_set():
                return RunResult("timeout", sqlstate=TIMEOUT)
            return RunResult("ok", columns, rows[:max_rows], truncated)
        except psycopg.Error as exc:
            if cancelled.is_set() or exc.sqlstate == TIMEOUT:
                return RunResult("timeout", sqlstate=TIMEOUT)
            if exc.sqlstate is None and isinstance(exc, psycopg.ProgrammingError):
                # answered without rows (not a query): refused client-side, nothing committed
                return RunResult("failed", sqlstate=NO_ROWS, message="the statement returns"
                                 " no rows")
            return RunResult("failed", sqlstate=exc.sqlstate or LOST, message=_primary(exc))
        finally:
            timer.cancel()
            conn.close()

    def _columns(self, cur: psycopg.Cursor[Any]) -> list[dict[str, str]]:
        result = cur.pgresult
        return [] if result is None else self._fields(result)

    def _described(self, conn: psycopg.Connection[Any], statement: str,
                   parameters: tuple[Parameter, ...]) -> list[dict[str, str]]:
        pgconn = conn.pgconn
        prepared = pgconn.prepare(b"cs_describe", statement.encode(), oids(parameters))
        if prepared.status != pq.ExecStatus.COMMAND_OK:
            return []
        return self._fields(pgconn.describe_prepared(b"cs_describe"))

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
