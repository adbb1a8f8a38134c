"""Migration 0016 (issue 24): the functions no template may reach are not executable by the
restricted login even when called directly, as if the registration check were wrong; the
service's own logins keep them (leadership takes advisory locks), also when the service's login
is no superuser; the migration is idempotent and the start-up check notices a function granted
back to PUBLIC.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from context_service import bootstrap
from context_service.adapters.postgres.lock import LeaderLock
from context_service.adapters.postgres.migrations import known
from context_service.adapters.postgres.sandbox.checks import catalog_problem
from context_service.adapters.postgres.sandbox.role import ROLE

pytestmark = pytest.mark.postgres
MIGRATION = "0016_revoke_public_functions.sql"
DIRECT = [
    ("SELECT * FROM pg_catalog.pg_show_all_settings()", "pg_show_all_settings"),
    ("SELECT pg_catalog.pg_stat_get_db_xact_commit(1)", "pg_stat_get_db_xact_commit"),
    ("SELECT count(*) FROM pg_catalog.pg_stat_activity", "pg_stat_get_activity"),
    ("SELECT pg_catalog.query_to_xml('SELECT 1', true, true, '')", "query_to_xml"),
    ("SELECT pg_catalog.table_to_xml('agent.passages', true, true, '')", "table_to_xml"),
    ("SELECT pg_catalog.pg_advisory_lock(7340021)", "pg_advisory_lock"),
    ("SELECT pg_catalog.pg_try_advisory_lock(7340021)", "pg_try_advisory_lock"),
    ("SELECT pg_catalog.pg_advisory_xact_lock(7340021)", "pg_advisory_xact_lock"),
    ("SELECT pg_catalog.pg_sleep(0)", "pg_sleep"),
    ("SELECT pg_catalog.pg_sleep_for('0 seconds')", "pg_sleep_for"),
    ("SELECT pg_catalog.lo_creat(-1)", "lo_creat"),
    ("SELECT pg_catalog.lo_get(1)", "lo_get"),
    ("SELECT pg_catalog.pg_read_file('PG_VERSION')", "pg_read_file"),
    ("SELECT * FROM pg_catalog.pg_ls_dir('.')", "pg_ls_dir"),
    ("SELECT pg_catalog.txid_current()", "txid_current"),
    ("SELECT pg_catalog.pg_current_xact_id()", "pg_current_xact_id"),
    ("SELECT pg_catalog.pg_blocking_pids(1)", "pg_blocking_pids"),
    ("SELECT pg_catalog.set_config('work_mem', '64GB', true)", "set_config"),
    ("SELECT pg_catalog.pg_database_size(pg_catalog.current_database())", "pg_database_size"),
]


@pytest.mark.shared_service  # read only: the cases share one container
@pytest.mark.parametrize(("statement", "function"), DIRECT)
def test_the_restricted_login_gets_permission_denied_calling_them_directly(
        container: bootstrap.Container, statement: str, function: str) -> None:
    with psycopg.connect(container.sandbox.conninfo) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege) as denied:
        conn.execute(statement)
    assert denied.value.diag.message_primary == f"permission denied for function {function}"


def test_every_listed_function_is_revoked_and_the_sandbox_keeps_what_it_needs(
        container: bootstrap.Container) -> None:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT count(*) AS n, count(*) FILTER (WHERE has_function_privilege(%s,"
                    " function, 'EXECUTE')) AS x FROM agent_data.revoked_functions", (ROLE,))
        counts = cur.fetchone()
        assert counts is not None and counts["n"] > 200 and counts["x"] == 0, counts
    # the agent views and the pool's session check call these on the restricted login
    with psycopg.connect(container.sandbox.conninfo) as conn:
        row = conn.execute("SELECT pg_catalog.current_setting('search_path'),"
                           " pg_catalog.pg_backend_pid() > 0, pg_catalog.now() IS NOT NULL,"
                           " (SELECT count(*) FROM pg_catalog.pg_locks) >= 0").fetchone()
    assert row == ("agent", True, True, True)


@pytest.fixture
def service_login(container: bootstrap.Container) -> Iterator[str]:
    """A login that is no superuser and owns the service's database (an external set-up),
    given the migration again by a superuser; its conninfo. Dropped afterwards."""
    name, password = f"cs_svc_{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    role = sql.Identifier(name)
    with psycopg.connect(container.url, autocommit=True) as conn:
        database = sql.Identifier(str(conn.info.dbname))
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER PASSWORD {}").format(
            role, sql.Literal(password)))
        conn.execute(sql.SQL("ALTER DATABASE {} OWNER TO {}").format(database, role))
        conn.execute(known()[MIGRATION].encode())
    params = conninfo_to_dict(container.url)
    params.update(user=name, password=password)
    yield make_conninfo(**params)  # type: ignore[arg-type]
    with psycopg.connect(container.url, autocommit=True) as conn:
        conn.execute(sql.SQL("REASSIGN OWNED BY {} TO CURRENT_USER").format(role))
        conn.execute(sql.SQL("DROP OWNED BY {}").format(role))
        conn.execute(sql.SQL("DROP ROLE {}").format(role))


def test_a_service_login_that_is_no_superuser_keeps_leadership_and_statistics(
        container: bootstrap.Container, service_login: str) -> None:
    lock = LeaderLock(service_login, f"leader-{uuid.uuid4().hex[:6]}")
    try:
        assert lock.try_acquire()
    finally:
        lock.release()
    with psycopg.connect(service_login) as conn:
        conn.execute("SELECT pg_advisory_xact_lock(7340021)")  # as migrate takes it
        assert conn.execute("SELECT count(*) > 0 FROM pg_stat_activity").fetchone() == (True,)
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT count(*) FILTER (WHERE NOT has_function_privilege(%s, function,"
                    " 'EXECUTE')) AS n FROM agent_data.revoked_functions",
                    (conninfo_to_dict(service_login)["user"],))
        assert cur.fetchone()["n"] == 0  # every one of them, as before the revocation
    with psycopg.connect(container.sandbox.conninfo) as conn, \
            pytest.raises(psycopg.errors.InsufficientPrivilege):  # and still not the sandbox
        conn.execute("SELECT pg_try_advisory_lock(1)")


def test_the_migration_is_idempotent(container: bootstrap.Container) -> None:
    acl = ("SELECT p.oid::int8 AS f, p.proacl::text AS acl FROM pg_proc p"
           " JOIN agent_data.revoked_functions r ON r.function = p.oid ORDER BY 1")
    with container.datastore.transaction(commit=False) as cur:
        cur.execute(acl)
        before = cur.fetchall()
    with psycopg.connect(container.url, autocommit=True) as conn:
        conn.execute(known()[MIGRATION].encode())
        conn.execute(known()[MIGRATION].encode())
    with container.datastore.transaction(commit=False) as cur:
        cur.execute(acl)
        assert cur.fetchall() == before


def test_the_start_up_check_names_a_function_granted_back_to_public(
        container: bootstrap.Container) -> None:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT current_user AS u")
        login = cur.fetchone()["u"]
        assert catalog_problem(cur, ROLE, login) is None
        cur.execute("GRANT EXECUTE ON FUNCTION pg_sleep(double precision) TO PUBLIC")
        assert catalog_problem(cur, ROLE, login) == \
            "EXECUTE on pg_sleep is not revoked from PUBLIC"
