"""Turns across API replicas: a PostgreSQL session advisory lock per (namespace, context).

Clones of a context and its GC runs must not interleave (spec 6.6 step 4: a snapshot a live clone
was made from is kept), and API replicas share nothing but PostgreSQL. Each turn waits for the
lock on a connection of its own, never one of the pool: the work done inside the turn needs the
pool, and waiting holders would exhaust it. Closing the connection releases the lock, also when
the process dies.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from context_service.adapters.postgres.lock import lock_key


class AdvisoryTurns:
    def __init__(self, url: str) -> None:
        self.url = url

    @contextmanager
    def __call__(self, namespace: str, context: str) -> Iterator[None]:
        key = lock_key(f"lifecycle-source/{namespace}/{context}")
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
            yield  # the connection's close releases the lock
