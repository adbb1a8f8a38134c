"""The escape suite of spec 11.6, run as a credential would: every statement a template must
not be able to run is refused at registration or fails at run time with the documented code,
and no table of the database changes (checksums of every table before and after).

Statements registration refuses are also handed to the sandbox directly, as if they had got
that far, to show the run-time layer holds on its own (issue 24: what a template calls is
checked against an allow-list, and the functions it must never reach are not executable by
the restricted login; ``template_grants.executable`` grants one back to test the layer behind).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, TypeVar

import psycopg
import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.consistency import LogConsistency
from context_service.adapters.postgres.sandbox.role import ROLE
from context_service.config import Settings
from tests.api.agent.packs_corpus import FACTS, NOTES
from tests.api.agent.packs_support import Agent, create_context, publish, record
from tests.api.agent.templates_support import approve, register, registered, runner, seeded
from tests.api.agent.templates_support import run as run_template
from tests.api.conftest import Api
from tests.security.template_grants import ADVISORY, SET_CONFIG, SLEEP, executable
from tests.support.api_helpers import fresh
from tests.support.services import suite_settings

# one service for the module: see ``corpus``
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
# the log and the views' positions move by the run's own event; every other table must not
MOVING = {"public.stored_events", "public.projection_tracking"}
REFUSED = "invalid query template: "
NOT_ALLOWED = "sql calls a function that is not allowed: "
T = TypeVar("T")


def checksums(container: bootstrap.Container) -> dict[str, str]:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT n.nspname || '.' || c.relname AS t FROM pg_class c"
                    " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind = 'r'"
                    " AND n.nspname NOT IN ('pg_catalog', 'information_schema')"
                    " AND n.nspname NOT LIKE 'pg_%%' ORDER BY 1")
        tables = [r["t"] for r in cur.fetchall() if r["t"] not in MOVING]
        out = {}
        for table in tables:
            cur.execute(f"SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), ''))"
                        f" AS h, count(*) AS n FROM {table} x")
            row = cur.fetchone()
            out[table] = f"{row['n']}:{row['h']}"
    return out


_DB: dict[str, bootstrap.Container] = {}


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Without the per-credential rate limit: every test runs templates as a credential."""
    return replace(suite_settings(tmp_path_factory.mktemp("escapes")), agent_rate_per_second=0)


@pytest.fixture(scope="module")
def module_corpus(module_api: Api, module_container: bootstrap.Container) -> Iterator[Api]:
    """The module's one service, seeded once: every test either is refused (nothing stored) or
    registers templates under names of its own, and ``unchanged`` compares the tables around
    each statement, not against an empty database."""
    _DB["container"] = module_container
    seeded(module_api)
    registered(module_api, "count-passages", "SELECT count(*) AS n FROM passages")
    approve(module_api, ["count-passages"])
    yield module_api
    _DB.clear()


@pytest.fixture
def corpus(module_corpus: Api) -> Api:
    return module_corpus


def refused(api: Api, sql: str, message: str | None = None,
            parameters: list[dict[str, Any]] | None = None) -> str:
    resp = register(api, "escape", sql, parameters)
    assert resp.status_code == 400, (sql, resp.text)
    found: str = resp.json()["message"]
    assert found.startswith(REFUSED), found
    if message is not None:
        assert found == REFUSED + message, (sql, found)
    return found


def unchanged(action: Callable[[], T]) -> T:
    """``action``'s result, asserting that no table changed (the log and the views' positions
    aside, which move by the run's own event)."""
    container = _DB["container"]
    settled = LogConsistency(container.store, container.tracking, container.view_runners())
    assert settled.wait(container.view_names, 10)  # the views have applied everything
    assert container.sandbox.settle()  # an earlier run's return step deletes its scope row
    before = checksums(container)
    result = action()
    assert container.sandbox.settle()  # and this run's: the row it recorded is gone again
    assert checksums(container) == before
    return result


def sandboxed(container: bootstrap.Container, sql: str, timeout_ms: int = 2000) -> Any:
    """The statement run directly in the sandbox, as if registration had let it through."""
    return unchanged(lambda: container.sandbox.run(sql, (), [], "acme", [FACTS], timeout_ms,
                                                   10))


def run(agent: Agent, template_id: str, parameters: dict[str, Any] | None = None) -> Any:
    return unchanged(lambda: run_template(agent, template_id, parameters))


def approved_run(api: Api, sql: str, parameters: list[dict[str, Any]] | None = None,
                 values: dict[str, Any] | None = None, template_id: str = "",
                 **extra: Any) -> Any:
    """Register ``sql`` (as ``template_id``, a fresh name by default), approve it and run it."""
    template_id = template_id or fresh("escape")
    registered(api, template_id, sql, parameters, **extra)
    approve(api, ["count-passages", template_id])
    return run(runner(api), template_id, values)


def failed(resp: Any, sqlstate: str | None = None) -> str:
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["code"] == "AGENT_QUERY_FAILED", body
    assert list(body["details"]) == ["sqlstate"]
    if sqlstate is not None:
        assert body["details"]["sqlstate"] == sqlstate, body
    message: str = body["message"]
    return message


NOT_SELECT = "sql must be a single SELECT or WITH statement"
WRITES = [
    "INSERT INTO passages (record_id) VALUES ('x')",
    "UPDATE passages SET text = ''",
    "DELETE FROM passages",
    "MERGE INTO passages p USING passages q ON false WHEN NOT MATCHED THEN DO NOTHING",
    "CREATE TABLE agent.x (a int)",
    "DROP VIEW agent.passages",
    "COPY (SELECT 1) TO STDOUT",
    "COPY (SELECT 1) TO PROGRAM 'touch /tmp/cs-escape'",
    "SET ROLE postgres",
    "RESET ROLE",
    "SET SESSION AUTHORIZATION postgres",
    "SET TRANSACTION READ WRITE",
    "CREATE EXTENSION dblink",
    "CREATE EXTENSION postgres_fdw",
    "  /* a comment */ -- and another\n  SHOW search_path",
]


@pytest.mark.parametrize("sql", WRITES)
def test_statements_that_are_not_a_select_are_refused_and_fail_in_the_sandbox(
        corpus: Api, container: bootstrap.Container, sql: str) -> None:
    refused(corpus, sql, NOT_SELECT)
    result = sandboxed(container, sql)
    # the statement is run as a cursor's query: one that is not a query (SHOW included) is a
    # syntax error before anything runs; the other codes are the layers behind it
    assert result.outcome == "failed", (sql, result)
    assert result.sqlstate in {"42601", "25006", "25001", "42501", "55000", "0A000", "42P01",
                               "42809", "58P01", "42704", "2F003"}, (sql, result)


DATABASE_REFUSED = [
    ("SELECT * FROM passages FOR UPDATE", "permission denied for view passages"),
    ("WITH d AS (DELETE FROM passages RETURNING record_id) SELECT * FROM d", None),
    ("SELECT nextval('public.stored_events_id_seq')", "permission denied for schema public"),
    ("SELECT nextval('agent.passages')", NOT_ALLOWED + "nextval"),
    ("SELECT * FROM public.stored_events", "permission denied for schema public"),
    ("SELECT * FROM context_sets", 'relation "context_sets" does not exist'),
    ("SELECT * FROM agent_data.passages", "permission denied for schema agent_data"),
    ("SELECT * FROM agent_data.scopes", "permission denied for schema agent_data"),
    ("SELECT * FROM pg_authid", "permission denied for table pg_authid"),
    ("SELECT pg_read_file('/etc/passwd')", NOT_ALLOWED + "pg_read_file"),
    ("SELECT pg_read_binary_file('/etc/passwd')", NOT_ALLOWED + "pg_read_binary_file"),
    ("SELECT * FROM pg_ls_dir('.')", NOT_ALLOWED + "pg_ls_dir"),
    ("SELECT lo_import('/etc/passwd')", NOT_ALLOWED + "lo_import"),
    ("SELECT pg_cancel_backend(1)", NOT_ALLOWED + "pg_cancel_backend"),
    ("SELECT pg_terminate_backend(1)", NOT_ALLOWED + "pg_terminate_backend"),
    ("SELECT * FROM dblink('dbname=postgres', 'SELECT 1') AS t(a int)", None),
    ("SELECT 1; DELETE FROM passages", "cannot insert multiple commands into a prepared"
                                       " statement"),
    ("SELECT relname FROM pg_class", "sql may read only the agent views"),
    ("SELECT * FROM information_schema.tables", None),
    ("SELECT * FROM pg_settings", None),
    ("SELECT * FROM pg_stat_activity", None),
    ("SELECT * FROM passages, pg_catalog.pg_namespace", "sql may read only the agent views"),
    ("SELECT * FROM json_each('{}')",
     "sql calls a set-returning function that is not allowed: json_each"),
]


@pytest.mark.parametrize(("sql", "message"), DATABASE_REFUSED)
def test_registration_refuses_what_reads_or_writes_outside_the_views(
        corpus: Api, container: bootstrap.Container, sql: str, message: str | None) -> None:
    refused(corpus, sql, message)
    assert sandboxed(container, sql).outcome == "failed" or "pg_" in sql \
        or "information_schema" in sql or "json_each" in sql


def test_catalog_reads_are_refused_although_the_login_could_plan_them(
        corpus: Api, container: bootstrap.Container) -> None:
    """Defence in depth: what the plan check refuses would at most see catalog rows, never
    another workspace's data (the login holds no privilege on any service table); the
    statistics readers behind pg_stat_activity are not even executable (migration 0016)."""
    result = sandboxed(container, "SELECT count(*) FROM pg_stat_activity"
                                  " WHERE query LIKE '%stored_events%'")
    assert (result.outcome, result.sqlstate) == ("failed", "42501"), result
    assert result.message == "permission denied for function pg_stat_get_activity"


def test_role_cannot_be_changed(corpus: Api, container: bootstrap.Container) -> None:
    sql = "SELECT set_config('role', 'postgres', false) AS r"
    refused(corpus, sql, NOT_ALLOWED + "set_config")
    result = sandboxed(container, sql)
    assert result.message == "permission denied for function set_config", result
    with executable(container, SET_CONFIG):  # and behind that, the login is a member of none
        result = sandboxed(container, sql)
    assert (result.outcome, result.sqlstate) == ("failed", "42501"), result
    assert "permission denied to set role" in result.message


@pytest.mark.parametrize("sql", [
    "SELECT set_config('role', 'postgres', true) AS r",
    "SELECT set_config('session_authorization', 'postgres', true) AS r",
    "SELECT set_config('transaction_read_only', 'off', true) AS r",
    "SELECT set_config('default_transaction_read_only', 'off', true),"
    " (SELECT count(*) FROM passages) AS r",
    "SELECT set_config('work_mem', '64GB', true) AS r",
])
def test_widening_a_setting_is_refused_and_fails_at_run_time(
        corpus: Api, container: bootstrap.Container, sql: str) -> None:
    refused(corpus, sql, NOT_ALLOWED + "set_config")
    assert sandboxed(container, sql).sqlstate == "42501"
    with executable(container, SET_CONFIG):
        result = sandboxed(container, sql)
    # work_mem and the default for later transactions may change, gone with the run's own
    widening = "work_mem" not in sql and "default_transaction" not in sql
    assert result.outcome == ("failed" if widening else "ok"), result


def test_another_scope_token_yields_no_rows(corpus: Api, container: bootstrap.Container) -> None:
    sql = ("SELECT count(*) AS n FROM (SELECT set_config('cs.agent_scope', '{}', true))"
           " AS s(t), LATERAL (SELECT 1 FROM passages WHERE s.t IS NOT NULL OFFSET 0) p")
    agent = runner(corpus)
    assert run(agent, "count-passages").json()["rows"] == [[7]]
    refused(corpus, sql.format("A" * 43), NOT_ALLOWED + "set_config")
    with executable(container, SET_CONFIG):
        for guess in ["A" * 43, "", "x'' OR true --"]:
            result = sandboxed(container, sql.format(guess))
            assert (result.outcome, result.rows) == ("ok", [[0]]), result


def test_injection_through_parameters_is_only_ever_a_value(corpus: Api) -> None:
    resp = approved_run(corpus, "SELECT count(*) AS n FROM passages WHERE record_id = :id",
                        [{"name": "id", "type": "text"}],
                        {"id": "x' OR '1'='1'; DELETE FROM agent_data.passages; --"},
                        template_id="injection")
    assert resp.status_code == 200 and resp.json()["rows"] == [[0]]
    resp = run(runner(corpus), "injection", {"id": "cfo-2024"})
    assert resp.json()["rows"] == [[1]]
    resp = run(runner(corpus), "injection", {"id": 1})
    assert resp.status_code == 400 and resp.json()["code"] == "VALIDATION_ERROR"


def _sessions_of_the_login(container: bootstrap.Container) -> tuple[set[int], int]:
    """The login's sessions, and how many are inside a transaction (every transaction holds at
    least its virtual transaction id lock; the login's track_activities is off)."""
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT a.pid, EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid) AS busy"
                    " FROM pg_stat_activity a WHERE a.usename = %s", (ROLE,))
        rows = cur.fetchall()
    return {int(r["pid"]) for r in rows}, sum(1 for r in rows if r["busy"])


def _one_session_closed(container: bootstrap.Container, before: set[int]) -> None:
    """The run's session is closed, not returned to the pool; none is left running. (The
    pool may also have replaced an idle session meanwhile, its own upkeep: at least one of
    the sessions there before is gone, where a session returned to the pool would leave them
    all.)"""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        pids, busy = _sessions_of_the_login(container)
        if busy == 0 and before - pids:
            break
        time.sleep(0.05)
    assert busy == 0 and before - pids, (before, pids, busy)


def test_a_run_never_outlives_its_timeout(corpus: Api, container: bootstrap.Container) -> None:
    """A run that waits in the database (here on a lock the test holds) answers 504."""
    registered(corpus, "blocked", "SELECT count(*) AS n FROM passages", timeoutMs=500)
    approve(corpus, ["count-passages", "blocked"])
    agent = runner(corpus)
    assert run(agent, "blocked").status_code == 200
    before, _ = _sessions_of_the_login(container)
    with psycopg.connect(container.url) as holder:
        holder.execute("LOCK TABLE agent_data.passages IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        resp = run_template(agent, "blocked")
        elapsed = time.monotonic() - started
    assert resp.status_code == 504, resp.text
    assert resp.json() == {"code": "AGENT_QUERY_TIMEOUT",
                           "message": "query template exceeded its timeout of 500 ms"}
    assert elapsed < 1.5 + 0.5  # timeoutMs + 1000, plus the request's own work
    _one_session_closed(container, before)


@pytest.mark.parametrize("sql", [
    "SELECT pg_sleep(60) AS s",
    "SELECT set_config('statement_timeout', '0', true), pg_sleep(60) AS s",
])
def test_a_statement_that_would_outlive_its_timeout_is_refused_and_cancelled(
        corpus: Api, container: bootstrap.Container, sql: str) -> None:
    refused(corpus, sql, NOT_ALLOWED + "pg_sleep")
    with executable(container, SLEEP, SET_CONFIG):
        before, _ = _sessions_of_the_login(container)
        started = time.monotonic()
        result = container.sandbox.run(sql, (), [], "acme", [FACTS], 500, 10)
        elapsed = time.monotonic() - started
    assert result.outcome == "timeout", result
    assert elapsed < 1.5 + 0.5  # timeoutMs + 1000: the service's cancel
    _one_session_closed(container, before)


def test_another_backend_cannot_be_signalled(corpus: Api, container: bootstrap.Container) -> None:
    with psycopg.connect(container.url) as other:
        pid = other.info.backend_pid
        for function in ("pg_cancel_backend", "pg_terminate_backend"):
            result = sandboxed(container, f"SELECT {function}({pid})")
            assert (result.outcome, result.sqlstate) == ("failed", "42501")
        assert other.execute("SELECT 1").fetchone() == (1,)


def test_no_extension_reaches_outside_the_database(corpus: Api,
                                                   container: bootstrap.Container) -> None:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT extname FROM pg_extension WHERE extname IN"
                    " ('dblink', 'postgres_fdw')")
        assert cur.fetchall() == []


def test_another_workspace_and_unlisted_collections_show_no_rows(corpus: Api) -> None:
    """globex has a context of the same name; the set of acme lists only company-facts."""
    corpus.as_("service:context-service-admin").put(
        "/v1/namespaces/globex/members",
        {"subject": {"kind": "user", "name": "gina"}, "role": "owner"})
    create_context(corpus, FACTS, owner="user:gina", ws="globex")
    publish(corpus, FACTS, "a" * 64, [record("g1", FACTS, "a" * 64, "globex only")],
            owner="user:gina", ws="globex")
    registered(corpus, "records", "SELECT collection_id, record_id FROM passages"
                                  " ORDER BY collection_id, ordinal")
    approve(corpus, ["count-passages", "records"], collections=(FACTS,))
    rows = run(runner(corpus), "records").json()["rows"]
    assert {r[0] for r in rows} == {FACTS} and "g1" not in {r[1] for r in rows}
    assert len(rows) == 5 and NOTES not in {r[0] for r in rows}


def test_errors_carry_no_part_of_the_statement(corpus: Api) -> None:
    resp = approved_run(corpus, "SELECT 1 / (count(*) - count(*)) AS secret_column_name"
                                " FROM passages")
    message = failed(resp, "22012")
    assert message == "query template failed: division by zero"
    assert "secret_column_name" not in resp.text and "passages" not in resp.text


def test_no_agent_route_returns_sql(corpus: Api) -> None:
    agent = Agent(corpus, runner(corpus).token)
    body = run(agent, "count-passages").text
    assert "SELECT" not in body and "sql" not in body


# issue 24: accepted at registration before what a template calls was checked
ISSUE_24 = [
    ("SELECT (pg_catalog.pg_show_all_settings()).*", "pg_show_all_settings"),
    ("SELECT * FROM ROWS FROM (generate_series(1, 2), pg_catalog.pg_show_all_settings())",
     "pg_show_all_settings"),
    ("SELECT query_to_xml('SELECT * FROM pg_stat_activity', true, true, '')", "query_to_xml"),
    ("SELECT query_to_xml('SELECT * FROM pg_catalog.pg_settings', true, false, '')",
     "query_to_xml"),
    ("SELECT pg_advisory_lock(7340021)", "pg_advisory_lock"),
    ("SELECT pg_try_advisory_lock(7340021)", "pg_try_advisory_lock"),
    ("SELECT pg_stat_get_db_xact_commit(1)", "pg_stat_get_db_xact_commit"),
]
# each category, and each place a call can sit: select list, FROM and ROWS FROM, expressions,
# subplans, CTEs, aggregates and their filters, window functions, ORDER BY; quoted and
# schema-qualified names resolve to the same function
CATEGORIES = [
    ("SELECT count(*) AS n FROM passages WHERE text <> current_setting('server_version')",
     "current_setting"),
    ("SELECT pg_settings_get_flags('work_mem')", "pg_settings_get_flags"),
    ("SELECT set_config('work_mem', '1GB', true)", "set_config"),
    ("SELECT * FROM pg_stat_get_activity(NULL)", "pg_stat_get_activity"),
    ("SELECT pg_stat_get_numscans(1)", "pg_stat_get_numscans"),
    ("SELECT pg_get_viewdef('agent.passages'::regclass)", "pg_get_viewdef"),
    ("SELECT has_table_privilege('agent.passages', 'SELECT')", "has_table_privilege"),
    ("SELECT to_regclass('pg_authid')", "to_regclass"),
    ("SELECT format_type(16, NULL)", "format_type"),
    ("SELECT pg_relation_size('agent.passages')", "pg_relation_size"),
    ("SELECT version()", "version"),
    ("SELECT cursor_to_xml('c', 1, true, true, '')", "cursor_to_xml"),
    ("SELECT table_to_xml('agent.passages', true, true, '')", "table_to_xml"),
    ("SELECT query_to_xml_and_xmlschema('SELECT 1', true, true, '')",
     "query_to_xml_and_xmlschema"),
    ("SELECT schema_to_xml('agent', true, true, '')", "schema_to_xml"),
    ("SELECT database_to_xml(true, true, '')", "database_to_xml"),
    ("SELECT pg_advisory_xact_lock(1)", "pg_advisory_xact_lock"),
    ("SELECT pg_try_advisory_xact_lock_shared(1)", "pg_try_advisory_xact_lock_shared"),
    ("SELECT pg_advisory_unlock_all()", "pg_advisory_unlock_all"),
    ('SELECT "pg_catalog"."pg_sleep"(1)', "pg_sleep"),
    ("SELECT PG_CATALOG.PG_SLEEP_FOR('1 second')", "pg_sleep_for"),
    ("SELECT pg_sleep_until(now())", "pg_sleep_until"),
    ("SELECT (SELECT pg_sleep(1)) AS s", "pg_sleep"),
    ("SELECT count(*) AS n FROM passages WHERE EXISTS (SELECT pg_sleep(1))", "pg_sleep"),
    ("WITH s AS (SELECT pg_sleep(1) AS x) SELECT * FROM s", "pg_sleep"),
    ("SELECT count(*) FILTER (WHERE pg_sleep(0) IS NULL) FROM passages", "pg_sleep"),
    ("SELECT count(*) FROM passages p WHERE p.text = ANY (SELECT pg_read_file('/etc/passwd'))",
     "pg_read_file"),
    ("SELECT string_agg(current_setting('data_directory'), ',')", "current_setting"),
    ("SELECT row_number() OVER (ORDER BY pg_backend_pid()) AS r", "pg_backend_pid"),
    ("SELECT count(*) AS n FROM passages ORDER BY max(pg_backend_pid())", "pg_backend_pid"),
    ("SELECT lo_creat(-1)", "lo_creat"),
    ("SELECT lo_get(1)", "lo_get"),
    ("SELECT lo_from_bytea(0, 'x')", "lo_from_bytea"),
    ("SELECT * FROM pg_stat_file('.')", "pg_stat_file"),
    ("SELECT * FROM pg_ls_waldir()", "pg_ls_waldir"),
    ("SELECT txid_current()", "txid_current"),
    ("SELECT pg_current_xact_id()", "pg_current_xact_id"),
    ("SELECT pg_xact_status('1')", "pg_xact_status"),
    ("SELECT txid_status(1)", "txid_status"),
    ("SELECT pg_current_snapshot()", "pg_current_snapshot"),
    ("SELECT pg_blocking_pids(1)", "pg_blocking_pids"),
    ("SELECT lastval()", "lastval"),
    ("SELECT pg_notify('c', 'x')", "pg_notify"),
]
# values whose output function reads the catalogs: an OID cast to a name
TYPES = [
    ("SELECT 1::oid::regclass::text", "regclass"),
    ("SELECT g::oid::regrole::text FROM generate_series(10, 20) g", "regrole"),
    ("SELECT makeaclitem(10, 10, 'SELECT', false)::text", "aclitem"),
]


@pytest.mark.parametrize(("sql", "function"), ISSUE_24 + CATEGORIES)
def test_registration_refuses_every_function_outside_the_allow_list(
        corpus: Api, container: bootstrap.Container, sql: str, function: str) -> None:
    refused(corpus, sql, NOT_ALLOWED + function)


@pytest.mark.parametrize(("sql", "type_name"), TYPES)
def test_registration_refuses_values_whose_output_reads_the_catalogs(
        corpus: Api, sql: str, type_name: str) -> None:
    refused(corpus, sql, f"sql uses a type that is not allowed: {type_name}")


@pytest.mark.parametrize(("sql", "function"), ISSUE_24)
def test_the_statements_of_issue_24_fail_in_the_sandbox_too(
        corpus: Api, container: bootstrap.Container, sql: str, function: str) -> None:
    result = sandboxed(container, sql)
    assert (result.outcome, result.sqlstate) == ("failed", "42501"), result
    assert result.message.startswith("permission denied for function"), result


ACCEPTED = [
    "SELECT title, now() - valid_from AS age, to_char(valid_from, 'YYYY-MM') AS month,"
    " date_trunc('month', valid_from) AS m, extract(year FROM valid_from) AS y,"
    " coalesce(fact_key, '') || ' ' || now() AS k FROM passages"
    " WHERE valid_from < now() - interval '1 day' AND valid_to >= current_date",
    "SELECT jsonb_agg(jsonb_build_object('id', record_id, 'kw', keywords)) AS j,"
    " json_agg(title) AS t, string_agg(text, ' ' ORDER BY ordinal) AS s,"
    " array_agg(ordinal) AS a, count(DISTINCT document_id) AS d,"
    " sum(tokens)::numeric / nullif(count(*), 0) AS avg FROM passages",
    "SELECT record_id, ts_rank(to_tsvector('english', text),"
    " websearch_to_tsquery('english', 'cfo')) AS r,"
    " to_tsvector(text) @@ plainto_tsquery('cfo') AS m FROM passages",
    "SELECT record_id, row_number() OVER w AS n, lag(title) OVER w AS prev,"
    " sum(tokens) OVER (ORDER BY valid_from RANGE BETWEEN interval '1 day' PRECEDING"
    " AND CURRENT ROW) AS s FROM passages"
    " WINDOW w AS (PARTITION BY collection_id ORDER BY ordinal)",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5)"
    " SELECT n, random() < 2 AS t, gen_random_uuid() IS NOT NULL AS u,"
    " upper(format('%s-%s', n, 'x')) AS f, regexp_replace('a', 'a', 'b') AS re,"
    " md5('x') AS h, round(1.234, 2) AS rd, greatest(1, 2) AS g,"
    " (SELECT count(*) FROM passages p WHERE p.ordinal = r.n) AS c FROM r",
    "SELECT k, count(*) AS n FROM passages, unnest(keywords) AS k WHERE k ILIKE 'c%'"
    " AND record_id IN ('a', 'b') AND title IS DISTINCT FROM 'x' GROUP BY k ORDER BY k",
    "SELECT money_currency, sum(money_amount) AS s, max(date_value) AS d,"
    " bool_or(boolean_value) AS b,"
    " percentile_cont(0.5) WITHIN GROUP (ORDER BY number_value) AS p FROM fields GROUP BY 1",
    "SELECT row_to_json(p) AS r FROM passages p",
    "SELECT (jsonb '{\"a\":1}')->>'a' AS a, '{\"a\":1}'::json -> 'a' AS b",
]


@pytest.mark.parametrize("sql", ACCEPTED)
def test_registration_accepts_functions_over_values(corpus: Api, sql: str) -> None:
    """Arithmetic, text, dates and times, JSON, text search, aggregates and windows."""
    resp = register(corpus, fresh("values"), sql)
    assert resp.status_code == 201, (sql, resp.text)


def test_advisory_locks_behind_the_revocation_do_not_survive_a_run(
        corpus: Api, container: bootstrap.Container) -> None:
    """The revocation is the second layer: with the lock functions executable again, a lock
    taken by a run is still released by the session's reset (``DISCARD ALL``)."""
    with executable(container, *ADVISORY):
        assert sandboxed(container, "SELECT pg_advisory_lock(4242)").outcome == "ok"
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory'"
                    " AND objid = 4242")
        assert cur.fetchone()["n"] == 0
