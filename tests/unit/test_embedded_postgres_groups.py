"""The embedded PostgreSQL and its first ``initdb``, run as a user of their own when the
service runs as root, hold that user's groups, not root's.

``subprocess``'s ``user=`` changes the user id alone: the server and ``initdb`` kept the group
id 0 and root's supplementary groups, so a process running as the server's user (a backend a
superuser's SQL can make run a program) could read and write every file open to the group
``root``, and the files ``initdb`` made belonged to that group. Shown on the running server
and on an ``initdb`` stand-in that writes its group ids down.
"""

from __future__ import annotations

import os
import pwd
import shlex
from pathlib import Path

import psutil
import pytest

from context_service.adapters.postgres import embedded
from tests.support.pg_shelf import initdb_after, linked_installation, writable_by_anyone

pytestmark = pytest.mark.postgres


def _own_groups(user: str) -> set[int]:
    """The groups ``user`` is a member of: its primary group and the supplementary ones."""
    gid = pwd.getpwnam(user).pw_gid
    return {gid, *os.getgrouplist(user, gid)}


@pytest.fixture
def recording_initdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The wheel's installation with an ``initdb`` that first writes its group ids down."""
    record = writable_by_anyone(tmp_path) / "initdb.groups"
    written = shlex.quote(str(record))
    initdb_after(linked_installation(tmp_path, monkeypatch),
                 f"id -g > {written}\nid -G >> {written}")
    return record


def test_the_server_and_its_initdb_hold_only_their_users_groups(
        tmp_path: Path, recording_initdb: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    embedded.start(data, database="postgres")
    try:
        child = embedded._OWN[(data / "pg").resolve()]
        assert child.pid is not None
        server = psutil.Process(child.pid)
        user = server.username()
        allowed = _own_groups(user)
        assert set(server.gids()) <= allowed, (user, server.gids(), allowed)
        with open(f"/proc/{child.pid}/status") as status:
            extra = next(line for line in status if line.startswith("Groups:"))
        assert {int(g) for g in extra.split()[1:]} <= allowed, (user, extra)
    finally:
        embedded.stop(data)
    primary, *others = recording_initdb.read_text().split("\n", 1)
    assert int(primary) in allowed
    assert {int(g) for g in others[0].split()} <= allowed
    assert (data / "pg" / "PG_VERSION").stat().st_gid in allowed
