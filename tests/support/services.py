"""PostgreSQL for the suite: the embedded server (or CS_DATABASE_URL), a fresh database per test
cloned from a migrated template, and a running service container over it."""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from context_service import bootstrap
from context_service.adapters.postgres import embedded
from context_service.config import Settings

TEMPLATE = "cs_test_template"


def _with_db(url: str, dbname: str) -> str:
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    return make_conninfo(**params)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    external = os.environ.get("CS_DATABASE_URL")
    if external:
        yield _with_db(external, "postgres")
        return
    data_dir = Path(tempfile.mkdtemp(prefix="cs-test-pg-"))
    try:
        url = embedded.start(data_dir, database="postgres")
    except Exception as exc:  # pragma: no cover - depends on the machine
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(f"no PostgreSQL available: {exc}")
    with psycopg.connect(url, autocommit=True) as conn:  # a throwaway server: speed over safety
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = off").format(sql.Identifier(setting)))
        conn.execute("SELECT pg_reload_conf()")
    yield url
    embedded.stop(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_template(pg_admin_url: str) -> str:
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(TEMPLATE))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE)))
    url = _with_db(pg_admin_url, TEMPLATE)
    container = bootstrap.build(Settings(), url=url, pool_size=1)
    container.close()
    return TEMPLATE


class Databases:
    """Test databases cloned from the migrated template and dropped behind the tests' backs.

    ``WAL_LOG`` copies the small template in about a third of the time ``FILE_COPY`` takes (it
    needs no checkpoint), and a finished test's database is dropped on a thread of its own while
    the next test runs; ``close`` waits for the last drops."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self._conn = psycopg.connect(admin_url, autocommit=True)
        self._drops: queue.Queue[str | None] = queue.Queue()
        self._dropper = threading.Thread(target=self._drop_each, name="test-db-drops",
                                         daemon=True)
        self._dropper.start()

    def clone(self, template: str) -> str:
        name = "t_" + uuid.uuid4().hex[:16]
        self._conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY WAL_LOG").format(
            sql.Identifier(name), sql.Identifier(template)))
        return name

    def drop(self, name: str) -> None:
        self._drops.put(name)

    def _drop_each(self) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            while (name := self._drops.get()) is not None:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(name)))

    def close(self) -> None:
        self._drops.put(None)
        self._dropper.join()
        self._conn.close()


@pytest.fixture(scope="session")
def test_databases(pg_admin_url: str) -> Iterator[Databases]:
    databases = Databases(pg_admin_url)
    yield databases
    databases.close()


@pytest.fixture
def database_url(pg_admin_url: str, pg_template: str,
                 test_databases: Databases) -> Iterator[str]:
    name = test_databases.clone(pg_template)
    yield _with_db(pg_admin_url, name)
    test_databases.drop(name)


TEST_CLIENT_HOST = "testserver.local"  # the Host Litestar's TestClient sends


@pytest.fixture(autouse=True)
def test_client_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Apps built in this process also answer the test client's Host (as a test environment
    does); a served process (tests/e2e/server.py) keeps the real rule."""
    names = Settings.allowed_host_names.fget  # type: ignore[attr-defined]
    monkeypatch.setattr(Settings, "allowed_host_names",
                        property(lambda s: names(s) | {TEST_CLIENT_HOST}))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    # auth_failure_per_second=0: suites fail authentication on purpose, all from the one test
    # client address; the throttle has tests of its own (tests/security/test_auth_throttle.py)
    return Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                    workers=("projections", "query-index"), auth_failure_per_second=0.0)


@pytest.fixture
def container(settings: Settings, database_url: str) -> Iterator[bootstrap.Container]:
    built = bootstrap.build(settings, url=database_url, pool_size=4)
    built.start_workers()
    yield built
    built.close()


@pytest.fixture
def idle_container(settings: Settings, database_url: str) -> Iterator[bootstrap.Container]:
    """A container whose projections do not run by themselves (tests drive them)."""
    built = bootstrap.build(settings, url=database_url, pool_size=4)
    yield built
    built.close()
