"""A first ``initdb`` killed after ``INITDB_SECONDS`` leaves no process behind. ``initdb`` does
its writing in children of its own (``postgres --boot``, then ``postgres --single``), and a
hung disk hangs the one writing: killing ``initdb`` alone left that child running on the
staging folder, still writing after it was removed."""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from context_service.adapters.postgres import embedded
from tests.support.pg_shelf import linked_installation, replace_initdb, writable_by_anyone

pytestmark = pytest.mark.postgres


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def test_the_child_of_a_hung_initdb_is_stopped_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shelf = linked_installation(tmp_path, monkeypatch)
    written = writable_by_anyone(tmp_path)
    # the stand-in's child hangs as a backend on a hung disk would; initdb waits for it
    replace_initdb(shelf, f"sleep 600 &\necho $! > {written}/child\nwait\n")
    monkeypatch.setattr(embedded, "INITDB_SECONDS", 1.0)
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(embedded.EmbeddedPostgresError, match="did not finish within 1 s"):
        embedded.start(data, database="postgres", timeout=20)
    child = int((written / "child").read_text())
    try:
        deadline = time.monotonic() + 5
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "initdb's child was left running"
    finally:
        if _alive(child):
            psutil.Process(child).kill()
    assert not (data / "pg.initdb").exists()
