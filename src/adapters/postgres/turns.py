"""Turns across API replicas: a PostgreSQL advisory lock per (namespace, context), held by a
transaction of the turn's own connection.

Clones of a context and its GC runs must not interleave (spec 6.6 step 4: a snapshot a live clone
was made from is kept), and API replicas share nothing but PostgreSQL. Each turn waits for the
lock on a connection of its own, never one of the pool: the work done inside the turn needs the
pool, and waiting holders would exhaust it. The transaction's end releases the lock, as does the
connection's close, also when the process dies; a pooler in transaction mode keeps the one server
session for the transaction. Clones and GC runs are rare administrative writes: a connection
each is their whole cost. When the process dies, the append it made inside the turn (on a pool
connection, waiting for the event table's lock, say) must end with it too, or it would commit
after another replica's turn began: the pool's sessions check that their client is still there
while a statement runs (``database.CLIENT_CHECK_MILLIS``).

The waits are bounded as every other session's (docs/operations.md, Hung dependencies): the lock
another session holds for ``wait_seconds`` at most (the service passes ``CS_LOCK_WAIT_SECONDS``
and ``CS_READ_WAIT_SECONDS``, as long as a GC may hold its turn waiting for the views; a replica
frozen in its turn keeps its session open on the server until TCP gives up, hours later), the
connection for as long as the pool's. Past either, the turn raises (``LockNotAvailable``,
``OperationalError``) and the request answers ``500`` with nothing written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

from context_service.adapters.postgres.database import (
    CONNECT_SECONDS,
    LOCK_TIMEOUT_SECONDS,
    lock_wait_option,
)
from context_service.adapters.postgres.lock import lock_key


class AdvisoryTurns:
    def __init__(self, url: str, wait_seconds: float = LOCK_TIMEOUT_SECONDS) -> None:
        self.url = url
        self.wait_seconds = wait_seconds

    @contextmanager
    def __call__(self, namespace: str, context: str) -> Iterator[None]:
        key = lock_key(f"lifecycle-source/{namespace}/{context}")
        with psycopg.connect(self.url, connect_timeout=CONNECT_SECONDS,
                             options=lock_wait_option(self.wait_seconds)) as conn, \
                conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (key,))
            yield
