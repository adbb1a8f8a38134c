"""Attacks on the resources a query template run may take on the database server.

A run is bounded in time (``timeoutMs``, at most 10 s) and in rows (``maxRows``), but a sort
or a hash that does not fit ``work_mem`` spills into temporary files, and nothing bounded their
size: a template sorting generated rows wrote gigabytes to the server's disk within its
timeout, four runs at once (the service-wide cap) four times that, on the disk that holds the
event log. The restricted login pins ``temp_file_limit``; PostgreSQL then ends the statement
with ``53400`` (``configuration_limit_exceeded``) once its files pass it.
"""

from __future__ import annotations

import psycopg.sql
import pytest

from context_service import bootstrap
from context_service.adapters.postgres.sandbox.checks import session_problem
from context_service.adapters.postgres.sandbox.role import ROLE
from tests.api.agent.templates_support import approve, registered, runner
from tests.api.agent.templates_support import run as run_template
from tests.api.conftest import Api
from tests.security.template_runs import corpus as corpus  # the fixture
from tests.security.template_runs import module_settings as module_settings  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
# a sort whose input (about 1.5 GB: 1.4 million rows of a kilobyte) must spill past the pin
SPILLING_SORT = ("SELECT g, repeat('x', 1024) AS pad FROM generate_series(1, 1400000) g"
                 " ORDER BY g DESC")


def pinned(container: bootstrap.Container) -> dict[str, str]:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT unnest(rolconfig) AS s FROM pg_roles WHERE rolname = %s", (ROLE,))
        return dict(str(row["s"]).split("=", 1) for row in cur.fetchall())


def test_the_restricted_login_pins_a_temporary_file_limit(
        corpus: Api, container: bootstrap.Container) -> None:
    settings = pinned(container)
    assert "temp_file_limit" in settings, settings
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT pg_size_bytes(%s) AS b", (settings["temp_file_limit"],))
        row = cur.fetchone()
    assert row is not None
    limit = row["b"]
    assert 0 < limit <= 1 << 30


def test_a_sort_spilling_past_the_limit_fails_instead_of_filling_the_disk(
        corpus: Api) -> None:
    registered(corpus, "spilling-sort", SPILLING_SORT, timeoutMs=10000)
    approve(corpus, ["spilling-sort"])
    resp = run_template(runner(corpus), "spilling-sort")
    assert resp.status_code == 400, (resp.status_code, resp.text[:300])
    assert resp.json()["details"] == {"sqlstate": "53400"}, resp.text
    assert resp.json()["message"].startswith("query template failed: temporary file size"), \
        resp.text


def test_a_sort_within_the_limit_still_runs(corpus: Api) -> None:
    """Spilling as such is allowed: a sort past ``work_mem`` but under the pin answers."""
    registered(corpus, "small-sort", "SELECT g, repeat('x', 1024) AS pad"
                                     " FROM generate_series(1, 20000) g ORDER BY g DESC",
               maxRows=3)
    approve(corpus, ["spilling-sort", "small-sort"])
    resp = run_template(runner(corpus), "small-sort")
    assert resp.status_code == 200, resp.text
    assert [row[0] for row in resp.json()["rows"]] == [20000, 19999, 19998]


def test_the_start_up_check_names_a_login_without_the_limit(
        corpus: Api, container: bootstrap.Container) -> None:
    """A login whose pin is lifted (here for this test's database only, as an operator's
    ``ALTER ROLE ... IN DATABASE`` would) is a sandbox that is not configured."""
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT current_database() AS db")
        row = cur.fetchone()
    assert row is not None
    database = row["db"]
    lift = psycopg.sql.SQL("ALTER ROLE {} IN DATABASE {} SET temp_file_limit = -1").format(
        psycopg.sql.Identifier(ROLE), psycopg.sql.Identifier(database))
    restore = psycopg.sql.SQL("ALTER ROLE {} IN DATABASE {} RESET temp_file_limit").format(
        psycopg.sql.Identifier(ROLE), psycopg.sql.Identifier(database))
    with container.datastore.transaction(commit=True) as cur:
        cur.execute(lift)
    try:
        problem = session_problem(container.sandbox.conninfo, ROLE)
    finally:
        with container.datastore.transaction(commit=True) as cur:
            cur.execute(restore)
    assert problem is not None and problem.startswith(
        f"setting temp_file_limit of login {ROLE} must be "), problem
    assert session_problem(container.sandbox.conninfo, ROLE) is None
