"""Fixtures of the fault suite: ``serve`` as a process on the suite's PostgreSQL (no embedded
children: ``CS_KUBE=off``, no relay), a container over the same database for inspecting the log
and views, and a rebuild of a copy of the log in a scratch database to compare views with."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from context_service import bootstrap
from context_service.config import Settings
from context_service.devcluster.controlplane import ControlPlane
from tests.e2e.server import ServerProcess
from tests.support.kube import running_apiserver
from tests.support.services import _with_db
from tests.support.views import snapshot

Rebuild = Callable[[bootstrap.Container], dict[str, list[Any]]]


@pytest.fixture
def serve(tmp_path: Path, database_url: str) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path, env={"CS_WORKERS": "projections,query-index"})
    proc.env["CS_DATABASE_URL"] = database_url
    yield proc
    if proc.proc is not None and proc.proc.poll() is None:
        proc.kill()


@pytest.fixture
def inspector(tmp_path: Path, database_url: str) -> Iterator[bootstrap.Container]:
    """A container over the served database whose workers never run (it only reads)."""
    built = bootstrap.build(Settings(data_dir=tmp_path, kube_mode="off"), url=database_url,
                            pool_size=2)
    yield built
    built.close()


def caught_up(container: bootstrap.Container, timeout: float = 30) -> int:
    """Wait until every view's tracking row reached the log head; return the head."""
    deadline = time.monotonic() + timeout
    while True:
        head = container.store.head()
        behind = [v for v in container.view_names
                  if (container.tracking.max_tracking_id(v) or 0) < head]
        if not behind:
            return head
        assert time.monotonic() < deadline, f"views {behind} did not reach {head}"
        time.sleep(0.05)


@pytest.fixture
def rebuilt(pg_admin_url: str, pg_template: str, tmp_path: Path) -> Rebuild:
    """The views of a rebuild from position zero of a copy of the container's log."""

    def rebuild(live: bootstrap.Container) -> dict[str, list[Any]]:
        name = "r_" + uuid.uuid4().hex[:16]
        with psycopg.connect(pg_admin_url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY WAL_LOG").format(
                sql.Identifier(name), sql.Identifier(pg_template)))
        url = _with_db(pg_admin_url, name)
        try:
            with psycopg.connect(live.url) as src, psycopg.connect(url) as dst, \
                    src.cursor().copy("COPY stored_events TO STDOUT (FORMAT binary)") as out, \
                    dst.cursor().copy("COPY stored_events FROM STDIN (FORMAT binary)") as into:
                for chunk in out:
                    into.write(chunk)
            scratch = bootstrap.build(Settings(data_dir=tmp_path, kube_mode="off"), url=url,
                                      pool_size=2)
            try:
                for runner in scratch.runners.values():
                    runner.rebuild()
                return snapshot(scratch)
            finally:
                scratch.close()
        finally:
            with psycopg.connect(pg_admin_url, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(name)))

    return rebuild


@pytest.fixture
def plane(kube_bin_dir: Path, tmp_path: Path) -> Iterator[ControlPlane]:
    """A kube-apiserver of the test's own (the crash tests pause and restart theirs)."""
    with running_apiserver(kube_bin_dir, tmp_path / "kube") as started:
        yield started
