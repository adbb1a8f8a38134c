"""The query login's temporary-file bound as the start-up check reads it.

The day's change pins ``temp_file_limit = 1GB`` on the restricted login and has the start-up
check compare the session's value with ``1GB`` as text. The bound is a ceiling: a login whose
limit is lower (an operator's own login in ``CS_AGENT_QUERY_URL``, made stricter for a small
disk) spills less, yet the check called it a sandbox that is not configured and every template
run answered 500. A limit above the ceiling, or none (``-1``), stays refused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

import psycopg.sql
import pytest

from context_service import bootstrap
from context_service.adapters.postgres.sandbox.checks import session_problem
from context_service.adapters.postgres.sandbox.role import ROLE
from context_service.config import Settings
from tests.support.services import suite_settings

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return replace(suite_settings(tmp_path_factory.mktemp("review-temp-files")),
                   agent_rate_per_second=0)


@pytest.fixture
def login_limit(container: bootstrap.Container) -> Iterator[Callable[[str], str | None]]:
    """Sets the login's ``temp_file_limit`` for this test's database only (as an operator's
    ``ALTER ROLE ... IN DATABASE`` would) and resets it afterwards."""
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT current_database() AS db")
        row = cur.fetchone()
    assert row is not None
    database = psycopg.sql.Identifier(row["db"])
    role = psycopg.sql.Identifier(ROLE)

    def set_limit(value: str) -> str | None:
        with container.datastore.transaction(commit=True) as cur:
            cur.execute(psycopg.sql.SQL("ALTER ROLE {} IN DATABASE {} SET temp_file_limit = {}")
                        .format(role, database, psycopg.sql.Literal(value)))
        return session_problem(container.sandbox.conninfo, ROLE)

    yield set_limit
    with container.datastore.transaction(commit=True) as cur:
        cur.execute(psycopg.sql.SQL("ALTER ROLE {} IN DATABASE {} RESET temp_file_limit")
                    .format(role, database))


@pytest.mark.parametrize("stricter", ["256MB", "1000MB", "1500kB", "0"])
def test_a_login_with_a_stricter_limit_is_a_configured_sandbox(
        login_limit: Callable[[str], str | None], stricter: str) -> None:
    assert login_limit(stricter) is None


@pytest.mark.parametrize("looser", ["-1", "1025MB", "2GB", "1TB"])
def test_a_login_with_a_looser_limit_or_none_is_still_refused(
        login_limit: Callable[[str], str | None], looser: str) -> None:
    problem = login_limit(looser)
    assert problem is not None and problem.startswith(
        f"setting temp_file_limit of login {ROLE} must be "), problem
