"""``contextctl history``: as-of reads, audit, events and export through a served process."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.contextctl.conftest import Cli
from tests.contextctl.normalise import normalise

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-h")


def test_as_of_audit_events_and_export(cli: Cli, tmp_path: Path) -> None:
    assert cli("ctx", "create", "past", *NS).code == 0
    before = json.loads(cli("history", "events", "past", "--json", *NS).out)["items"][-1]
    time.sleep(0.01)
    moment = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # the service's clock too
    time.sleep(0.01)
    assert cli("ctx", "grant", "past", "agent:bot", *NS).code == 0
    old_grants = cli("ctx", "grants", "past", "--as-of", moment, *NS)
    assert "agent:bot" not in old_grants.out and "user:alice" in old_grants.out
    assert "agent:bot" in cli("ctx", "grants", "past", *NS).out
    at_position = cli("history", "show", "past", "--as-of-position", str(before["position"]),
                      "--json", *NS)
    assert json.loads(at_position.out)["name"] == "past"
    shown = cli("history", "show", "past", "--as-of", moment, *NS)
    assert shown.out.startswith("Context\n  Name:                past\n")
    assert cli("ctx", "ls", "--as-of", moment, "--json", *NS).code == 0

    audit = cli("history", "audit", "past", *NS)
    assert normalise(audit.out) == (
        "TIME  ACTION  SUBJECT  TARGET\n"
        "<TIME>  context.created  user:alice\n"
        "<TIME>  grant.set  user:alice  agent:bot\n")
    page = cli("history", "audit", "past", "--limit", "1", *NS)
    assert page.out.count("\n") == 2 and page.err.startswith("more events: --cursor ")
    every = cli("history", "audit", "past", "--limit", "1", "--all", "--json", *NS)
    assert [e["action"] for e in json.loads(every.out)["items"]] == [
        "context.created", "grant.set"]

    events = cli("history", "events", "past", *NS)
    lines = normalise(events.out).splitlines()
    assert lines[0] == "POSITION  TIME  EVENT  ACTOR"
    assert [line.split("  ")[2:] for line in lines[1:]] == [
        ["ContextCreated", "user:alice"], ["AccessGranted", "user:alice"]]

    target = tmp_path / "past.jsonl"
    exported = cli("history", "export", "past", "-f", str(target), *NS)
    assert exported.err == f"exported 2 events of past to {target}\n"
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert [r["name"] for r in rows] == ["ContextCreated", "AccessGranted"]
    to_stdout = cli("history", "export", "past", *NS)
    assert [json.loads(line) for line in to_stdout.out.splitlines()] == rows
    dash = cli("history", "export", "past", "-f", "-", *NS)  # "-" is standard output, as usual
    assert [json.loads(line) for line in dash.out.splitlines()] == rows


def test_history_errors(cli: Cli) -> None:
    needs_point = cli("history", "show", "nothing", *NS)
    assert needs_point.code == 2 and "--as-of or --as-of-position is required" in needs_point.err
    both = cli("ctx", "get", "x", "--as-of", "2026-01-01T00:00:00Z", "--as-of-position", "1",
               *NS)
    assert both.code == 2 and "--as-of cannot be combined with --as-of-position" in both.err
    bad_time = cli("ctx", "get", "x", "--as-of", "yesterday", *NS)
    assert (bad_time.code, bad_time.err) == (
        1, "contextctl: asOf must be an RFC 3339 timestamp with a zone\n")
    assert cli("history", "audit", "x", *NS).err == "contextctl: context resource not found\n"
