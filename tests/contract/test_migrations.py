"""Migrations and the schema version: an incomplete installation (no or unreadable migration
files) and a database ahead of the code fail start-up with a clear message, before anything is
applied; readiness names what is wrong."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from context_service import bootstrap
from context_service.adapters.postgres.migrations import (
    MIGRATIONS_DIR,
    MigrationError,
    known,
    schema_problem,
)
from context_service.config import Settings

pytestmark = pytest.mark.postgres


def test_the_package_carries_its_migrations() -> None:
    names = list(known())
    assert names == sorted(names) and names[0].startswith("0001_")
    # a checkout reads the top-level folder (the wheel installs it as context_service/migrations)
    assert Path(__file__).resolve().parents[2] / "migrations" == MIGRATIONS_DIR


@pytest.mark.parametrize("layout", ["missing", "empty"])
def test_no_migrations_is_an_incomplete_installation(tmp_path: Path, layout: str) -> None:
    directory = tmp_path / "migrations"
    if layout == "empty":
        directory.mkdir()
    with pytest.raises(MigrationError, match="no migrations found in .*: the installation is "
                                             r"incomplete \(reinstall context-service\)"):
        known(directory)


def test_an_unreadable_migration_is_named(tmp_path: Path) -> None:
    (tmp_path / "0001_ok.sql").write_text("SELECT 1;")
    (tmp_path / "0002_broken.sql").write_bytes(b"\xff\xfe not text")
    with pytest.raises(MigrationError, match=r"cannot read migration .*0002_broken\.sql"):
        known(tmp_path)


def record(url: str, sql: str, *params: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql, params)  # type: ignore[arg-type]


def test_a_database_ahead_of_the_code_refuses_to_start(database_url: str) -> None:
    assert schema_problem(database_url) is None
    record(database_url, "INSERT INTO schema_migrations (name) VALUES (%s)", "0999_future.sql")
    with pytest.raises(MigrationError) as caught:
        bootstrap.build(Settings(), url=database_url, pool_size=1)
    assert str(caught.value) == (
        "the database schema is newer than this version of context-service: it has migrations "
        "this version does not know (0999_future.sql); run a version that includes them")
    assert schema_problem(database_url) == str(caught.value)


def test_readiness_names_a_schema_behind_the_code_and_an_unreachable_database(
        database_url: str, tmp_path: Path) -> None:
    last = list(known())[-1]
    record(database_url, "DELETE FROM schema_migrations WHERE name = %s", last)
    assert schema_problem(database_url) == (
        f"the database schema is behind this version: {last} not applied")
    gone = f"postgresql://postgres@/nowhere?host={tmp_path}"
    assert schema_problem(gone) == "the database is unreachable: OperationalError"
