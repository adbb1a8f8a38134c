"""What ``contextctl query`` tells the person at the terminal about a context it could not
search: the reason must be the true one, and say what to do about it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.contextctl.conftest import Cli

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-qm")


def test_a_context_without_a_revision_is_not_called_stale(cli: Cli) -> None:
    assert cli("ctx", "create", "fresh", "--type", "knowledge", *NS).code == 0
    found = cli("query", "release", "--context", "fresh", *NS)
    assert (found.code, found.out) == (0, "No records found.\n")
    assert "does not match" not in found.err
    assert found.err == ("unavailable (no revision published yet; publish one with "
                         "contextctl ingest PATH... --context NAME): fresh\n")


def test_each_unavailable_context_is_named_under_its_own_reason(cli: Cli,
                                                                tmp_path: Path) -> None:
    assert cli("ctx", "create", "bare", "--type", "memory", *NS).code == 0
    assert cli("ctx", "create", "unindexed", "--type", "knowledge", *NS).code == 0
    body = tmp_path / "revision.json"
    body.write_text(json.dumps({"id": "ab" * 32, "createdAt": "2026-03-01T09:00:00Z",
                                "operation": "sync"}))
    assert cli("ctx", "publish", "unindexed", str(body), *NS).code == 0
    found = cli("query", "release", "--context", "unindexed", "--context", "bare", *NS)
    assert found.code == 0
    assert found.err.splitlines() == [
        "unavailable (no revision published yet; publish one with contextctl ingest PATH... "
        "--context NAME): bare",
        "unavailable (index does not match the current revision): unindexed"]
    every = cli("query", "release", "--context", "unindexed", "--context", "bare", "--all", *NS)
    assert every.err == found.err
    as_json = cli("query", "release", "--context", "unindexed", "--context", "bare", "--json",
                  *NS)
    assert json.loads(as_json.out)["unavailable"] == ["bare", "unindexed"]
    assert as_json.err == ""
