"""PostgreSQL for the suite: the embedded server (or CS_DATABASE_URL), a fresh database per test
cloned from a migrated template, and a running service container over it."""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import signal
import subprocess
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

# one template per pytest-xdist worker: workers sharing an external server (CS_DATABASE_URL) must
# not drop each other's; each worker starts an embedded server of its own otherwise
TEMPLATE = "cs_test_template_" + os.environ.get("PYTEST_XDIST_WORKER", "main")


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
    _stop_at_once(data_dir)
    embedded.stop(data_dir)
    _discard(data_dir)


def _discard(data_dir: Path) -> None:
    """Delete the thrown-away server's data in the background: with every test database kept it
    holds hundreds of thousands of files, and deleting them in the session's teardown held the
    last worker about 45 s (measured). ``sh`` returns at once; ``rm`` runs on, orphaned."""
    subprocess.run(["sh", "-c", f"rm -rf -- {shlex.quote(str(data_dir))} &"], check=False,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def _stop_at_once(data_dir: Path) -> None:
    """An immediate shutdown (SIGQUIT) of the suite's own server: its data is thrown away, so
    the shutdown checkpoint that a fast shutdown writes (every test database is kept until
    now) is time for nothing."""
    try:
        pid = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGQUIT)


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
    """Test databases cloned from the migrated template.

    ``WAL_LOG`` copies the small template in about a third of the time ``FILE_COPY`` takes (it
    needs no checkpoint). On an external server (``dropping``) a finished test's database is
    dropped on a thread of its own and ``close`` waits for the last drops. The suite's own
    embedded server keeps them until it is thrown away with its data directory: a drop forces a
    checkpoint, which the next clone waits for (a drop per test made each API test's setup
    about twice as long, measured)."""

    def __init__(self, admin_url: str, dropping: bool = True) -> None:
        self.admin_url = admin_url
        self.dropping = dropping
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
        if self.dropping:
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
    databases = Databases(pg_admin_url, dropping=bool(os.environ.get("CS_DATABASE_URL")))
    yield databases
    databases.close()


@pytest.fixture
def database_url(pg_admin_url: str, pg_template: str,
                 test_databases: Databases) -> Iterator[str]:
    name = test_databases.clone(pg_template)
    yield _with_db(pg_admin_url, name)
    test_databases.drop(name)


TEST_CLIENT_HOST = "testserver.local"  # the Host Litestar's TestClient sends


@pytest.fixture(scope="session", autouse=True)
def test_client_host() -> Iterator[None]:
    """Apps built in this process also answer the test client's Host (as a test environment
    does); a served process (tests/e2e/server.py) keeps the real rule. Session-wide: a module's
    shared application is built before any test's own fixtures."""
    names = Settings.allowed_host_names.fget  # type: ignore[attr-defined]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Settings, "allowed_host_names",
                      property(lambda s: names(s) | {TEST_CLIENT_HOST}))
        yield


def shares_service(request: pytest.FixtureRequest) -> bool:
    """Whether the test's module runs on one service (``pytest.mark.shared_service``)."""
    return request.node.get_closest_marker("shared_service") is not None


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    if shares_service(request):
        shared: Settings = request.getfixturevalue("module_settings")
        return shared
    return suite_settings(tmp_path)


@pytest.fixture
def container(request: pytest.FixtureRequest,
              settings: Settings) -> Iterator[bootstrap.Container]:
    """A running container over a database of the test's own; in a module marked
    ``shared_service``, the module's one (``module_container``)."""
    if shares_service(request):
        yield request.getfixturevalue("module_container")
        return
    built = bootstrap.build(settings, url=request.getfixturevalue("database_url"), pool_size=4)
    built.start_workers()
    yield built
    built.close()


@pytest.fixture
def idle_container(settings: Settings, database_url: str) -> Iterator[bootstrap.Container]:
    """A container whose projections do not run by themselves (tests drive them)."""
    built = bootstrap.build(settings, url=database_url, pool_size=4)
    yield built
    built.close()


def suite_settings(data_dir: Path) -> Settings:
    # auth_failure_per_second=0: suites fail authentication on purpose, all from the one test
    # client address; the throttle has tests of its own (tests/security/test_auth_throttle.py)
    return Settings(data_dir=data_dir, sandbox_image="busybox:1.36", kube_mode="off",
                    workers=("projections", "query-index"), auth_failure_per_second=0.0)


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The settings of a ``shared_service`` module (a module overrides this fixture, not
    ``settings``, to change them)."""
    return suite_settings(tmp_path_factory.mktemp("module"))


@pytest.fixture(scope="module")
def module_container(module_settings: Settings, pg_admin_url: str, pg_template: str,
                     test_databases: Databases) -> Iterator[bootstrap.Container]:
    """One running container for a whole module (``pytest.mark.shared_service``), for tests
    that isolate by the names they create (a namespace, context or template of their own)
    instead of by an empty database: it saves a database, a container and an application per
    test."""
    name = test_databases.clone(pg_template)
    built = bootstrap.build(module_settings, url=_with_db(pg_admin_url, name), pool_size=4)
    built.start_workers()
    yield built
    built.close()
    test_databases.drop(name)
