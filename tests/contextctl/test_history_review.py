"""``contextctl history export`` and ``events --all`` across page boundaries: every event once,
in log order."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_service.contextctl import history
from tests.contextctl.conftest import Cli

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-hr")


def test_export_and_every_page_hold_each_event_once_in_order(
        cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("ctx", "create", "paged", *NS).code == 0
    for agent in ("a", "b", "c"):
        assert cli("ctx", "grant", "paged", f"agent:{agent}", *NS).code == 0
    whole = json.loads(cli("history", "events", "paged", "--json", *NS).out)["items"]
    assert len(whole) == 4
    monkeypatch.setattr(history, "EXPORT_PAGE", 1)  # one event a page: every cursor is followed
    target = tmp_path / "paged.jsonl"
    exported = cli("history", "export", "paged", "-f", str(target), *NS)
    assert exported.err == f"exported 4 events of paged to {target}\n"
    assert [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()] == whole
    every = cli("history", "events", "paged", "--limit", "1", "--all", "--json", *NS)
    assert json.loads(every.out)["items"] == whole
    rest = cli("history", "events", "paged", "--limit", "3", "--json", *NS)
    cursor = json.loads(rest.out)["nextCursor"]
    tail = cli("history", "events", "paged", "--cursor", cursor, "--json", *NS)
    assert json.loads(tail.out)["items"] == whole[3:]
