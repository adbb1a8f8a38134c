"""Connections: an ``eventsourcing`` PostgresDatastore (psycopg 3 pool) from a database URL."""

from __future__ import annotations

from eventsourcing.postgres import PostgresDatastore
from psycopg.conninfo import conninfo_to_dict


def open_datastore(url: str, pool_size: int = 8, max_overflow: int = 16) -> PostgresDatastore:
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
        connect_timeout=10,
        pool_open_timeout=None,
        enable_db_functions=False,
    )
    return datastore
