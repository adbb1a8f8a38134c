"""Another user of the machine cannot reach the embedded PostgreSQL.

The embedded server trusts every local connection (``initdb --auth-local=trust``): its socket's
directory is the only guard. When the data directory's path is too long for a socket name, the
socket goes to a directory under the runtime directory instead, and that directory was made
``0777`` with every directory above it opened to all: any user of the machine connected as the
superuser ``postgres`` without a password, and read the service's secrets (the credential key,
the query login's password) and every event. The service runs as root here, so the server runs
as ``embedded_postgres`` and the attacker is ``nobody``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_service.adapters.postgres import embedded

pytestmark = pytest.mark.postgres
# PostgreSQL's startup message for user and database postgres; with trust the server answers
# AuthenticationOk (an 'R' message holding 0) at once; stdlib only: nobody cannot read the
# virtual environment
PROBE = """
import socket, struct, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1] + "/.s.PGSQL.5432")
except OSError as exc:
    print("refused", type(exc).__name__)
    sys.exit(0)
params = b"user\\0postgres\\0database\\0postgres\\0\\0"
s.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
kind, length = s.recv(1), struct.unpack("!i", s.recv(4))[0]
body = s.recv(length - 4)
print("trusted" if kind == b"R" and body[:4] == bytes(4) else "answered " + repr(kind))
"""


@pytest.fixture
def long_data_dir(tmp_path_factory: pytest.TempPathFactory,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A data directory too deep for a socket name in it, and the server started on it."""
    runtime = tmp_path_factory.mktemp("rt")
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    data = tmp_path_factory.mktemp("data") / ("d" * 60) / ("e" * 40)
    data.mkdir(parents=True)
    url = embedded.start(data, database="postgres")
    try:
        yield data, url.split("host=", 1)[1]
    finally:
        embedded.stop(data)


def test_another_user_cannot_connect_to_the_embedded_server(
        long_data_dir: tuple[Path, str]) -> None:
    assert os.geteuid() == 0, "the service runs as root here, the server as a user of its own"
    data, socket_dir = long_data_dir
    assert not socket_dir.startswith(str(data))  # the case under attack: a socket elsewhere
    done = subprocess.run(["/usr/bin/python3", "-c", PROBE, socket_dir], user="nobody",
                          cwd="/", capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused"), done.stdout


def test_the_service_still_connects(long_data_dir: tuple[Path, str]) -> None:
    import psycopg

    _, socket_dir = long_data_dir
    with psycopg.connect(f"postgresql://postgres:@/postgres?host={socket_dir}") as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
