"""Start-up refuses, with a clear message and exit code 2, what it cannot run safely: a
malformed setting, and a database whose schema is ahead of the code."""

from __future__ import annotations

import os
import subprocess
import sys

import psycopg
import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "context_service.cli", *args],
                          env={**os.environ, "CS_LOG_FORMAT": "json", "CS_KUBE": "off",
                               "CS_SANDBOX_IMAGE": "busybox:1.36", **env},
                          text=True, capture_output=True, timeout=120, check=False)


def test_a_malformed_shutdown_grace_stops_at_startup() -> None:
    result = cli({"CS_SHUTDOWN_GRACE": "soon"}, "serve")
    assert result.returncode == 2
    assert result.stderr.strip() == ("CS_SHUTDOWN_GRACE must be a number of seconds (0 or more), "
                                     "got 'soon'")


@pytest.mark.parametrize("command", ["migrate", "serve"])
def test_a_database_ahead_of_the_code_stops_startup(database_url: str, command: str) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_migrations (name) VALUES ('0999_future.sql')")
    result = cli({"CS_DATABASE_URL": database_url}, command)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().endswith(
        "context-service: the database schema is newer than this version of context-service: "
        "it has migrations this version does not know (0999_future.sql); run a version that "
        "includes them")
