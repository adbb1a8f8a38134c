"""The event table as the crash and shutdown suites look at it: how many statements wait for its
lock (an append held back by a test's transaction), and how many events mention a text."""

from __future__ import annotations

import psycopg


def waiting_for_the_lock(database_url: str) -> int:
    """Statements waiting for a lock on ``stored_events`` now."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE NOT granted"
                           " AND relation = 'stored_events'::regclass").fetchone()
    assert row is not None
    return int(row[0])


def mentions(database_url: str, text: str) -> int:
    """Events of the log whose state holds ``text``."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM stored_events"
                           " WHERE position(%s::bytea in state) > 0", (text.encode(),)).fetchone()
    assert row is not None
    return int(row[0])
