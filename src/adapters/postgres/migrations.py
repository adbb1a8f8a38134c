"""Forward-only migrations: ``NNNN_name.sql`` in the top-level ``migrations/`` folder (installed
as ``context_service/migrations``), applied once each, in order; the schema version is the set of
applied names.

The event and tracking tables belong to ``eventsourcing`` and are created through its recorders;
the read-model tables are ours and live in the SQL files. Start-up fails when the migration set
is missing or unreadable, or when the database has migrations this code does not know.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import psycopg
from eventsourcing.postgres import PostgresDatastore


def _migrations_dir() -> Path:
    """``context_service/migrations`` in an installation; in a checkout, where the package is the
    ``src/`` folder, the top-level ``migrations/`` beside it."""
    package = Path(str(resources.files("context_service"))).resolve()
    checkout = package.parent / "migrations"
    if package.name == "src" and checkout.is_dir():
        return checkout
    return package / "migrations"


MIGRATIONS_DIR = _migrations_dir()
_PATTERN = "[0-9][0-9][0-9][0-9]_*.sql"
_TABLE = ("CREATE TABLE IF NOT EXISTS schema_migrations "
          "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")


class MigrationError(RuntimeError):
    """The migrations cannot be applied, or the database schema does not match this code."""


def known(directory: Path = MIGRATIONS_DIR) -> dict[str, str]:
    """Every migration of this code, name -> SQL, in order; raises when there are none or one
    cannot be read (an incomplete installation must not start against an empty schema)."""
    try:
        paths = sorted(directory.glob(_PATTERN))
    except OSError as exc:
        raise MigrationError(f"cannot list the migrations in {directory}: {exc}") from exc
    if not paths:
        raise MigrationError(f"no migrations found in {directory}: the installation is "
                             "incomplete (reinstall context-service)")
    found = {}
    for path in paths:
        try:
            found[path.name] = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise MigrationError(f"cannot read migration {path}: {exc}") from exc
    return found


def unknown_to_code(applied: set[str], code: dict[str, str]) -> str | None:
    """Why the database is ahead of this code, or None when it is not."""
    ahead = sorted(applied - set(code))
    if not ahead:
        return None
    return (f"the database schema is newer than this version of context-service: it has "
            f"migrations this version does not know ({', '.join(ahead)}); run a version that "
            "includes them")


def migrate(datastore: PostgresDatastore, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply every pending migration, each in its own transaction; return their names. Refuses
    (``MigrationError``) before applying anything when the database is ahead of the code."""
    code = known(directory)
    problem = unknown_to_code(_applied(datastore), code)
    if problem is not None:
        raise MigrationError(problem)
    applied: list[str] = []
    for name, text in code.items():
        with datastore.transaction(commit=True) as cur:
            # another instance may be migrating, and a migration's DDL waits for the readers
            # of its tables: wait as long as it takes (the pool's sessions otherwise give up
            # on a lock after database.LOCK_TIMEOUT_SECONDS)
            cur.execute("SET LOCAL lock_timeout = 0")
            cur.execute("SELECT pg_advisory_xact_lock(7340021)")
            cur.execute("SELECT 1 FROM schema_migrations WHERE name = %s", (name,))
            if cur.fetchone() is not None:
                continue
            cur.execute(text)  # type: ignore[arg-type]
            cur.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
        applied.append(name)
    return applied


def schema_problem(url: str, directory: Path = MIGRATIONS_DIR, timeout: int = 2) -> str | None:
    """Readiness: None when the database answers and its applied migrations are exactly this
    code's, else why not. A connection of its own, so a busy pool does not read as an outage."""
    try:
        code = known(directory)
    except MigrationError as exc:
        return str(exc)
    try:
        with psycopg.connect(url, connect_timeout=timeout, autocommit=True) as conn:
            conn.execute(f"SET statement_timeout = {int(timeout * 1000)}")
            rows = conn.execute("SELECT name FROM schema_migrations").fetchall()
    except psycopg.errors.UndefinedTable:
        return "the database has no schema yet (run context-service migrate)"
    except psycopg.Error as exc:
        return f"the database is unreachable: {type(exc).__name__}"
    applied = {str(row[0]) for row in rows}
    missing = [name for name in code if name not in applied]
    if missing:
        return f"the database schema is behind this version: {', '.join(missing)} not applied"
    return unknown_to_code(applied, code)


def _applied(datastore: PostgresDatastore) -> set[str]:
    with datastore.transaction(commit=True) as cur:
        cur.execute(_TABLE)
        cur.execute("SELECT name FROM schema_migrations")
        return {row["name"] for row in cur.fetchall()}
