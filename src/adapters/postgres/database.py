"""Connections: an ``eventsourcing`` PostgresDatastore (psycopg 3 pool) from a database URL."""

from __future__ import annotations

from eventsourcing.postgres import PostgresDatastore
from psycopg.conninfo import conninfo_to_dict

# How long a statement waits for a lock another session holds before it fails. An append holds
# the event table's lock for milliseconds; a wait this long means a session took it and stopped
# (a forgotten transaction), and without a bound every write, and the worker thread and pool
# connection each one holds, would wait for as long as that session lives. Shorter than the
# append connection's own answer timeout (10 s), so a write fails with the lock as its reason.
LOCK_TIMEOUT_SECONDS = 5.0
CONNECT_SECONDS = 10  # a server that accepts a connection and never answers is an error then
# How often a session running a statement asks the kernel whether its client is still there.
# A statement waiting for a lock does not read its connection: without the check, the append
# of a process that died (SIGKILL, the OOM killer) committed once the lock went, seconds later,
# after the turn it was made in had ended with the process (another replica's GC then read no
# clone and deleted the clone's snapshot). With it, the statement ends within this interval of
# the process's death, uncommitted.
CLIENT_CHECK_MILLIS = 100


def open_datastore(url: str, pool_size: int = 8, max_overflow: int = 16,
                   lock_timeout: float = LOCK_TIMEOUT_SECONDS) -> PostgresDatastore:
    params = conninfo_to_dict(url)
    datastore = PostgresDatastore(
        dbname=str(params.get("dbname", "postgres")),
        host=str(params.get("host", "127.0.0.1")),
        port=str(params.get("port", "5432")),
        user=str(params.get("user", "postgres")),
        password=str(params.get("password", "")),
        pool_size=pool_size,
        max_overflow=max_overflow,
        max_waiting=0,
        connect_timeout=CONNECT_SECONDS,
        pool_open_timeout=None,
        enable_db_functions=False,
    )
    _bound_lock_waits(datastore, lock_timeout)
    return datastore


def _bound_lock_waits(datastore: PostgresDatastore, seconds: float) -> None:
    """Every session of the pool, and every connection made like the pool's (the event loop's
    append connection copies its parameters), starts with ``lock_timeout`` and checks that its
    client is still connected while a statement runs."""
    kwargs = datastore.pool.kwargs
    assert isinstance(kwargs, dict)  # built by the datastore, never a callable here
    kwargs["options"] = f"{lock_wait_option(seconds)} {CLIENT_CHECK_OPTION}"


CLIENT_CHECK_OPTION = f"-c client_connection_check_interval={CLIENT_CHECK_MILLIS}"


def lock_wait_option(seconds: float) -> str:
    """The start-up ``options`` that bound a session's lock waits to ``seconds`` (0: none)."""
    millis = max(1, round(seconds * 1000)) if seconds > 0 else 0  # 0: PostgreSQL's "no bound"
    return f"-c lock_timeout={millis}"
