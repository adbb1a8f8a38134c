"""The command line as an operator uses it: status, rebuild (progress and rate), export and
verify of the hash-chained log."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from context_service.bootstrap import Container
from tests.projections.history import write_history
from tests.support.newer_events import NEWER, create, record_newer

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


def cli(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CS_DATABASE_URL": database_url, "CS_LOG_FORMAT": "json"}
    return subprocess.run([sys.executable, "-m", "context_service.cli", *args], env=env, text=True,
                          capture_output=True, timeout=120, check=False)


def test_status_rebuild_export_and_verify(idle_container: Container, database_url: str,
                                          data_dir: Path) -> None:
    write_history(idle_container.contexts, seed=4, steps=80)
    head = idle_container.store.head()
    status = cli(database_url, "projections", "status")
    assert status.returncode == 0, status.stderr
    rows = {line.split()[0]: line.split()[1:] for line in status.stdout.splitlines()[1:]}
    assert rows["context_catalog"] == ["0", str(head)]

    rebuilt = cli(database_url, "projections", "rebuild", "context_catalog")
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert f"context_catalog: {head} events in" in rebuilt.stdout
    assert "events/s" in rebuilt.stdout
    after = cli(database_url, "projections", "status").stdout
    assert [line.split() for line in after.splitlines() if line.startswith("context_catalog")] \
        == [["context_catalog", str(head), "0"]]
    assert cli(database_url, "projections", "rebuild", "nope").returncode == 2

    out = data_dir / "log.jsonl"
    exported = cli(database_url, "history", "export", "--output", str(out))
    assert exported.returncode == 0, exported.stderr
    assert f"exported {head} events" in exported.stdout
    last = exported.stdout.split("last hash ")[1].strip()
    ok = cli(database_url, "history", "verify", str(out))
    assert ok.returncode == 0 and "hash chain intact" in ok.stdout
    anchored = cli(database_url, "history", "verify", str(out), "--last-hash", last)
    assert anchored.returncode == 0, anchored.stderr
    assert "hash chain intact, ending with the export's last line" in anchored.stdout
    whole = out.read_bytes()
    cut = data_dir / "cut.jsonl"
    cut.write_bytes(whole[:whole.rindex(b"\n", 0, len(whole) - 1) + 1])  # the last line gone
    short = cli(database_url, "history", "verify", str(cut), "--last-hash", last)
    assert short.returncode == 1 and f"line {head} is broken" in short.stderr
    assert cli(database_url, "history", "verify", str(out), "--last-hash", "x").returncode == 2
    raw = bytearray(out.read_bytes())
    third = raw.index(b"\n", raw.index(b"\n") + 1) + 1
    raw[third + 20] ^= 0x01
    out.write_bytes(bytes(raw))
    broken = cli(database_url, "history", "verify", str(out))
    assert broken.returncode == 1
    assert "line 3 is broken" in broken.stderr


def test_status_names_the_events_a_view_passed_over(idle_container: Container,
                                                    database_url: str) -> None:
    create(idle_container, "a")
    newer = record_newer(idle_container, "a", version=2)
    idle_container.runners["projections"].catch_up()
    status = cli(database_url, "projections", "status")
    assert status.returncode == 0, status.stderr
    assert (f"context_catalog passed over 1 events of type {NEWER} (positions {newer} to "
            f"{newer}): unknown to this version") in status.stdout.splitlines()
