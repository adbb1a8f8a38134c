"""Sessions of the restricted login (spec 11.2 check 9, 11.5): the registration check and runs.

Each run: admitted (``admission.py``), a pooled session (a brief wait, counted against the
timeout), a scope row bound to that session's backend recorded on the service's login, then one
pipeline: ``BEGIN READ ONLY``, the statement timeout and the scope token set with ``SET LOCAL``
(the login may not execute ``set_config``, migration 0016), the statement declared as a cursor
with its values bound as the declared types (inside a query bounding its rows' bytes, below),
``FETCH maxRows``, ``ROLLBACK``. A client-side cancel fires at ``timeoutMs + 1000``. The answer
goes out then; the scope row is deleted and the session reset in its return step
(``sessions.py``) before any other run can have it; a run that failed, timed out or was
cancelled closes it. Statement text always goes through the extended protocol, which refuses
more than one statement.

The answer is bounded in bytes by the database: the cursor's query adds one column to the
statement's, computed as each row is, which fails the run once the rows' text passes
``ANSWER_BYTES`` (before the row that passed it is sent) and otherwise tells whether another
row follows (``truncated``, without that row being sent). The service so never receives more
than about the limit, whatever ``maxRows`` and the rows' sizes; a refused run is answered as a
database failure, ``54000`` (program_limit_exceeded).
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psycopg
from eventsourcing.postgres import PostgresDatastore
from psycopg_pool import PoolTimeout

from context_service.adapters.postgres.sandbox.admission import Admission, RunLimits
from context_service.adapters.postgres.sandbox.calls import functions_problem, types_problem
from context_service.adapters.postgres.sandbox.parse_tree import calls, tokens
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
from context_service.domain.bounded import BoundedCache, Gauge, MiB, text_bytes
from context_service.domain.query_template.events import Parameter
from context_service.domain.query_template.placeholders import skip_lexeme, skip_trivia

CANCEL_GRACE_MS = 1000
# A run's rows hold at most this many bytes of text, each row counted as the database writes
# it as a record (its values' text output, commas, parentheses and the quotes of values that
# need them): never less than the values themselves
ANSWER_BYTES = 16 << 20
PAST_LIMIT = "54000"  # program_limit_exceeded: the rows passed ANSWER_BYTES
SYNTAX = "42601"
MULTIPLE = "cannot insert multiple commands into a prepared statement"
CHECK_TIMEOUT_MS = 5000
TIMEOUT = "57014"  # query_canceled: statement_timeout or our cancel
LOST = "08006"  # connection_failure: the session ended without an error of the server
# Column type names by (type oid, modifier): a template's author picks the modifiers
# (``varchar(1)`` to ``varchar(10485760)``), so the names are kept for the most recently used
# few only; a name dropped is asked of the server again.
TYPE_NAMES = 1024
_TYPE_NAME_ENTRY = 200  # the key tuple, its two ints and the table slot, beyond the name


@dataclass
class RunResult:
    outcome: str  # ok, timeout, failed, or busy (not admitted: no session in time)
    columns: list[dict[str, str]] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    truncated: bool = False
    sqlstate: str = ""
    message: str = ""  # the database's primary message, for ``failed``


# The failing branch casts text naming the marker to boolean (22P02): computed from the row,
# it is evaluated for that row only, never folded when the query is planned. ``q.*`` is the
# whole row even when the statement names a column ``q``. ``lead`` reads one row ahead, as the
# ``FETCH maxRows + 1`` it replaces did, but only the flag of the row before it is sent.
_MARKER = "cs-answer-bytes "
_BOUNDED = ("DECLARE cs_run NO SCROLL CURSOR FOR SELECT q.*, CASE"
            f" WHEN sum(octet_length(q.*::text)) OVER w > {ANSWER_BYTES}"
            f" THEN ('{_MARKER}' || sum(octet_length(q.*::text)) OVER w)::boolean"
            " ELSE lead(true, 1, false) OVER w END FROM (").encode()
_BOUNDED_END = b"\n) AS q WINDOW w AS (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
# what may start a string, a quoted name, a comment or a dollar quote, and the semicolon
_LEXEME = re.compile(r"""--|/\*|[;'"$]""")


def _one_statement(sql: str) -> str | None:
    """``sql`` without the semicolons that may end it, to be the subquery of the bounding
    query; None when another statement follows (answered with the server's message for it).

    A misreading here can only refuse a statement: the text always goes inside the bounding
    query, where a semicolon or an unclosed literal is a syntax error.
    """
    i = 0
    while (found := _LEXEME.search(sql, i)) is not None:
        at = found.start()
        if found.group() == ";":
            end = skip_trivia(sql, at + 1)
            while sql.startswith(";", end):
                end = skip_trivia(sql, end + 1)
            return sql[:at] if end == len(sql) else None
        past = skip_lexeme(sql, at)
        i = at + 1 if past is None else past
    return sql


def _prepare(parameters: tuple[Parameter, ...], statement: str) -> bytes:
    types = declared(parameters)
    head = f"PREPARE cs_template({types}) AS " if types else "PREPARE cs_template AS "
    return (head + statement).encode()


_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")


def _scope(token: str) -> str:
    """``SET LOCAL`` of the scope token: 43 base64url characters drawn by the service, checked
    before they are written into the statement."""
    if _TOKEN.fullmatch(token) is None:
        raise ValueError("a scope token is 43 base64url characters")
    return f"SET LOCAL cs.agent_scope = '{token}'"


def _statement_tree(trees: list[str]) -> str | None:
    """The analysed query among the parse trees the server logged (the utility statements
    around it log theirs too): the one tree whose top node is a ``SELECT`` query."""
    found = []
    for tree in trees:
        head = [t for t, _ in zip(tokens(tree), range(4), strict=False)]
        if head == [("{", False), ("QUERY", False), (":commandType", False), ("1", False)]:
            found.append(tree)
    return found[0] if len(found) == 1 else None


class TemplateSandbox:
    """Runs statements on the restricted login; ``problem`` is the start-up check's finding."""

    def __init__(self, datastore: PostgresDatastore, conninfo: str, problem: str | None,
                 sessions: Sessions | None = None, scopes: Scopes | None = None,
                 limits: RunLimits | None = None) -> None:
        self.datastore = datastore
        self.conninfo = conninfo
        self.problem = problem
        self._sessions = sessions
        self._scopes = scopes
        self.admission = Admission(limits or RunLimits(sessions=4, wait_seconds=0.5,
                                                       per_workspace=2))
        self._types: BoundedCache[tuple[int, int], str] = BoundedCache(
            "sandbox_type_names", MiB, lambda _, name: _TYPE_NAME_ENTRY + text_bytes(name),
            max_entries=TYPE_NAMES)
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
        """Check 9, on a fresh session: the database's primary message, a refusal of what the
        statement calls or of its plan, or None.

        The statement is prepared with ``debug_print_parse`` sent to this session only: the
        server's analysed tree names every function, operator and type it calls by OID.
        """
        trees: list[str] = []

        def note(diag: psycopg.errors.Diagnostic) -> None:
            if diag.severity_nonlocalized == "LOG" and diag.message_primary == "parse tree:":
                trees.append(diag.message_detail or "")

        with self._connect() as conn:
            conn.add_notice_handler(note)
            try:
                conn.execute("BEGIN READ ONLY")
                conn.execute(f"SET LOCAL statement_timeout = {CHECK_TIMEOUT_MS}")
                conn.execute(_scope(secrets.token_urlsafe(32)))
                conn.execute("SET LOCAL debug_pretty_print = off")
                conn.execute("SET LOCAL client_min_messages = log")
                conn.execute("SET LOCAL debug_print_parse = on")
                conn.execute(_prepare(parameters, statement), prepare=True)
                conn.execute("SET LOCAL debug_print_parse = off")
                conn.execute("SET LOCAL client_min_messages = notice")
                tree = _statement_tree(trees)
                if tree is None:
                    return "sql could not be inspected"
                called = calls(tree)
                refused = functions_problem(conn, called)
                if refused is not None:
                    return refused
                conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
                nulls = ", ".join("NULL" for _ in parameters)
                row = conn.execute(
                    "EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE cs_template"
                    + (f"({nulls})" if parameters else "")).fetchone()
                assert row is not None
                plan = row[0] if not isinstance(row[0], str) else json.loads(row[0])
                # what it reads (the spec's message), then the values it handles
                return plan_problem(plan) or types_problem(conn, called)
            except psycopg.Error as exc:
                return _primary(exc)
            finally:
                _rollback(conn)

    def run(self, statement: str, parameters: tuple[Parameter, ...], values: Sequence[Any],
            namespace: str, collections: Sequence[str], timeout_ms: int,
            max_rows: int) -> RunResult:
        assert self._sessions is not None and self._scopes is not None, self.problem
        if not self.admission.enter(namespace):
            return RunResult("busy")
        try:
            return self._admitted(statement, parameters, values, namespace, collections,
                                  timeout_ms, max_rows)
        finally:
            self.admission.leave(namespace)

    def _admitted(self, statement: str, parameters: tuple[Parameter, ...],
                  values: Sequence[Any], namespace: str, collections: Sequence[str],
                  timeout_ms: int, max_rows: int) -> RunResult:
        assert self._sessions is not None and self._scopes is not None
        started = time.monotonic()
        try:  # briefly: the admitted runs fit the sessions, a wait means some are reopening
            conn = self._sessions.take(min(self.admission.limits.wait_seconds,
                                           timeout_ms / 1000))
        except PoolTimeout:
            return RunResult("busy")
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
        one = _one_statement(statement)
        if one is None:
            return RunResult("failed", sqlstate=SYNTAX, message=MULTIPLE), True
        cancelled = threading.Event()

        def cancel() -> None:
            cancelled.set()
            conn.cancel_safe(timeout=1.0)

        alarm = self._watchdog.arm(deadline, cancel)
        try:
            fetch = conn.cursor()
            # one round trip; the statement is the query of a cursor, so the server computes
            # no more than the maxRows rows fetched and the one after, and its description
            # comes with them
            with conn.pipeline():
                conn.execute("BEGIN READ ONLY")
                conn.execute(f"SET LOCAL statement_timeout = {int(remaining_ms)}")
                conn.execute(_scope(token))
                conn.execute(_BOUNDED + one.encode() + _BOUNDED_END,
                             bound(parameters, values))
                fetch.execute(f"FETCH FORWARD {int(max_rows)} FROM cs_run")
                conn.execute("ROLLBACK")
            if cancelled.is_set():
                return RunResult("timeout", sqlstate=TIMEOUT), False
            result = fetch.pgresult
            width = result.nfields - 1 if result else 0  # the statement's columns
            rows = json_rows(fetch.fetchall(), [result.ftype(i) for i in range(width)]
                             if result else [])
            more = [row.pop() for row in rows]  # the added column, never converted
            columns = self._fields(result, width) if result else []
            return RunResult("ok", columns, rows, bool(more) and more[-1] is True), True
        except psycopg.Error as exc:
            if cancelled.is_set() or exc.sqlstate == TIMEOUT:
                return RunResult("timeout", sqlstate=TIMEOUT), False
            if exc.sqlstate == "22P02" and _MARKER in _primary(exc):  # quoted per language
                return RunResult("failed", sqlstate=PAST_LIMIT,
                                 message=f"its rows exceed {ANSWER_BYTES} bytes"), False
            return RunResult("failed", sqlstate=exc.sqlstate or LOST,
                             message=_primary(exc)), False
        finally:
            self._watchdog.disarm(alarm)

    def _fields(self, result: Any, width: int | None = None) -> list[dict[str, str]]:
        """The first ``width`` columns (all by default) with their type names."""
        out = []
        for i in range(result.nfields if width is None else width):
            key = (result.ftype(i), result.fmod(i))
            type_name = self._types.get(key)
            if type_name is None:
                type_name = self._types.keep(key, self._type_name(*key))
            name = result.fname(i)
            out.append({"name": name.decode() if name is not None else "",
                        "type": type_name})
        return out

    def cache_gauges(self) -> list[Gauge]:
        """The column type names held (``cs_cache_*``, cache ``sandbox_type_names``)."""
        return self._types.gauges()

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
