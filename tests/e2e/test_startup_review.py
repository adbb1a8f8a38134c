"""A setting the service cannot honour stops every command at once with exit code 2 and one line
naming it, before anything starts: never a traceback, never a silent default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e]


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "context_service.cli", *args],
                          env={**os.environ, "CS_LOG_FORMAT": "json", "CS_KUBE": "off",
                               "CS_SANDBOX_IMAGE": "busybox:1.36", **env},
                          text=True, capture_output=True, timeout=120, check=False)


@pytest.mark.parametrize(("key", "raw", "line"), [
    # a traceback before: "²" passed str.isdigit, then int() refused it
    ("CS_AGENT_RATE_BURST", "²", "CS_AGENT_RATE_BURST must be a positive integer, got '²'"),
    # read as false before: the service ran without requiring a subject
    ("CS_REQUIRE_SUBJECT", "ture",
     "CS_REQUIRE_SUBJECT must be true or false (or 1/0, yes/no, on/off), got 'ture'"),
    # read as text before
    ("CS_LOG_FORMAT", "jsonl", "CS_LOG_FORMAT must be auto, json or text, got 'jsonl'"),
    # started no worker before
    ("CS_WORKERS", "projection",
     "CS_WORKERS names unknown worker(s) projection; known: projections, query-index, "
     "reconciler, relay, snapshots (comma-separated; empty: none)"),
    # listened on every interface before
    ("CS_LISTEN_ADDR", "8080",
     "CS_LISTEN_ADDR must be host:port with a port from 1 to 65535 (such as 127.0.0.1:8080, "
     "[::1]:8080, or :8080 for every interface), got '8080'"),
])
def test_a_setting_that_cannot_be_honoured_stops_every_command(
        tmp_path: Path, key: str, raw: str, line: str) -> None:
    exported = tmp_path / "empty.jsonl"
    exported.write_text("")
    result = cli({key: raw}, "history", "verify", str(exported))  # needs no server at all
    assert (result.returncode, result.stderr, result.stdout) == (2, line + "\n", "")


def test_a_port_in_use_is_one_line_and_exit_2_before_anything_starts(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = cli({"CS_LISTEN_ADDR": f"127.0.0.1:{port}", "CS_DATA_DIR": str(tmp_path),
                      "CS_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}, "serve")
    assert result.returncode == 2, result.stderr
    assert result.stderr == (f"context-service: cannot listen on 127.0.0.1:{port} "
                             "(CS_LISTEN_ADDR): address already in use\n")
    assert "Context Service on" not in result.stdout


def test_a_data_directory_that_cannot_be_made_is_one_line_and_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    # without CS_DATABASE_URL: the embedded PostgreSQL keeps its files in the data directory
    result = cli({"CS_DATA_DIR": str(blocker / "data"), "CS_DATABASE_URL": ""}, "migrate")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"context-service: cannot use {blocker}")
    assert result.stderr.endswith(f"(the data directory, CS_DATA_DIR, is {blocker / 'data'})\n")
    assert "Traceback" not in result.stderr
