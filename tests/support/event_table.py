"""The event table's lock as the crash and shutdown suites use it: how many statements wait
for it (an append held back by a test's transaction)."""

from __future__ import annotations

import psycopg


def waiting_for_the_lock(database_url: str) -> int:
    """Statements waiting for a lock on ``stored_events`` now."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted"
                           " AND relation = 'stored_events'::regclass").fetchone()
    assert row is not None
    return int(row[0])
