"""Forward-only migrations: ``context_service/migrations/NNNN_name.sql`` (package data),
applied once each, in order.

The event and tracking tables belong to ``eventsourcing`` and are created through its recorders;
the read-model tables are ours and live in the SQL files.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from eventsourcing.postgres import PostgresDatastore

MIGRATIONS_DIR = Path(str(resources.files("context_service") / "migrations"))


def pending(datastore: PostgresDatastore, directory: Path = MIGRATIONS_DIR) -> list[Path]:
    with datastore.transaction(commit=True) as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS schema_migrations "
                    "(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
        cur.execute("SELECT name FROM schema_migrations")
        done = {row["name"] for row in cur.fetchall()}
    return [p for p in sorted(directory.glob("[0-9][0-9][0-9][0-9]_*.sql")) if p.name not in done]


def migrate(datastore: PostgresDatastore, directory: Path = MIGRATIONS_DIR) -> list[str]:
    """Apply every pending migration, each in its own transaction; return their names."""
    applied: list[str] = []
    for path in pending(datastore, directory):
        with datastore.transaction(commit=True) as cur:
            cur.execute("SELECT pg_advisory_xact_lock(7340021)")
            cur.execute("SELECT 1 FROM schema_migrations WHERE name = %s", (path.name,))
            if cur.fetchone() is not None:
                continue
            cur.execute(path.read_text())  # type: ignore[arg-type]
            cur.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (path.name,))
        applied.append(path.name)
    return applied
