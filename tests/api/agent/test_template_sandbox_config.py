"""A sandbox whose start-up check fails (spec 11.5): the service logs the failing point, and
registration and runs answer ``500`` ``query template sandbox is not configured: <point>``.

The operator's login (``CS_AGENT_QUERY_URL``) is used, so migrate does not repair it: one that
is a member of another role, and one that lacks its grants on the agent views.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from litestar.testing import TestClient
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from context_service import bootstrap
from context_service.config import Settings
from tests.api.agent.packs_support import Agent
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.agent.templates_support import approve, register, registered, run, runner, seeded
from tests.api.conftest import Api

pytestmark = pytest.mark.postgres
SQL = "SELECT count(*) AS n FROM passages"


@pytest.fixture
def operator_login(database_url: str) -> Iterator[tuple[str, str, str]]:
    """A login made like the managed one (its name, a role it could join, its conninfo),
    both roles dropped afterwards."""
    name, parent = f"cs_tq_{uuid.uuid4().hex[:8]}", f"cs_tq_parent_{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    with psycopg.connect(database_url, autocommit=True) as conn:
        db = sql.Identifier(str(conn.info.dbname))
        role = sql.Identifier(name)
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN NOINHERIT PASSWORD {}").format(
            role, sql.Literal(password)))
        conn.execute(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(parent)))
        for setting, value in (("search_path", "agent"), ("statement_timeout", "10000"),
                               ("default_transaction_read_only", "on"),
                               ("track_activities", "off")):
            conn.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(
                role, sql.Identifier(setting), sql.Literal(value)))
        conn.execute(sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(db, role))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA agent TO {}").format(role))
        for view in ("collections", "documents", "passages", "fields"):
            conn.execute(sql.SQL("GRANT SELECT ON agent.{} TO {}").format(
                sql.Identifier(view), role))
    params = conninfo_to_dict(database_url)
    params.update(user=name, password=password)
    yield name, parent, make_conninfo(**params)  # type: ignore[arg-type]
    with psycopg.connect(database_url, autocommit=True) as conn:
        for role_name in (name, parent):
            conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role_name)))
            conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role_name)))


@pytest.mark.parametrize(("breakage", "point"), [
    ("GRANT {parent} TO {role}", "login {name} is a member of role {parent}"),
    ("REVOKE SELECT ON agent.fields FROM {role}",
     "login {name} must hold exactly SELECT on agent.fields"),
])
def test_a_failing_start_up_check_answers_500_naming_the_point_and_is_logged(
        api: Api, settings: Settings, database_url: str, operator_login: tuple[str, str, str],
        caplog: pytest.LogCaptureFixture, tmp_path: Path, breakage: str, point: str) -> None:
    seeded(api)
    registered(api, "count", SQL)  # on the healthy managed login
    approve(api, ["count"])
    agent = runner(api)
    name, parent, conninfo = operator_login
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(sql.SQL(breakage).format(role=sql.Identifier(name),
                                              parent=sql.Identifier(parent)))
    expected = "query template sandbox is not configured: " + point.format(
        name=name, parent=parent)
    broken_settings = Settings(data_dir=tmp_path / "broken", sandbox_image="busybox:1.36",
                               kube_mode="off", workers=(), agent_rate_per_second=0,
                               agent_query_url=conninfo)
    with caplog.at_level(logging.ERROR):
        broken = bootstrap.build(broken_settings, url=database_url, pool_size=2)
    try:
        assert broken.sandbox.problem is not None
        assert expected in [r.getMessage() for r in caplog.records]
        with TestClient(app=bootstrap.app(broken)) as client:
            other = Api(client)
            resp = register(other, "another", SQL)
            assert resp.status_code == 500, resp.text
            assert resp.json() == {"error": "internal_error", "message": expected}
            resp = run(_agent_on(other, agent), "count")
            assert resp.status_code == 500, resp.text
            assert resp.json() == {"code": "INTERNAL_ERROR", "message": expected}
    finally:
        broken.close()
    assert run(agent, "count").status_code == 200  # the healthy service runs it


def _agent_on(api: Api, agent: Agent) -> Agent:
    return Agent(api, agent.token)
