"""``contextctl index push`` and ``contextctl query`` through a served process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.contextctl.conftest import Cli
from tests.contextctl.normalise import normalise

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
NS = ("-n", "ctl-q")
REV = "cd" * 32


def records_file(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n\n" for r in records))
    return path


def knowledge(cli: Cli, name: str, tmp_path: Path, revision: str = REV,
              ns: tuple[str, str] = NS) -> None:
    assert cli("ctx", "create", name, "--type", "knowledge", *ns).code == 0
    body = tmp_path / f"{name}-revision.json"
    body.write_text(json.dumps({"id": revision, "createdAt": "2026-03-01T09:00:00Z",
                                "operation": "sync"}))
    assert cli("ctx", "publish", name, str(body), *ns).code == 0


RECORDS = [
    {"id": "a", "title": "Release schedule", "text": "Friday release schedule"},
    {"id": "b", "title": "Release", "text": "release schedule"},
    {"id": "c", "title": "Unrelated", "text": "nothing here",
     "source": {"context": "upstream", "type": "state", "revision": ""}},
]


def test_push_then_query(cli: Cli, tmp_path: Path) -> None:
    knowledge(cli, "kb", tmp_path)
    pushed = cli("index", "push", "kb", str(records_file(tmp_path / "r.jsonl", RECORDS)), *NS)
    assert (pushed.code, pushed.out, pushed.err) == (
        0, f"published 3 records for revision {REV[:12]} to kb\n", "")
    found = cli("query", "release schedule", *NS)
    assert found.code == 0, found.err
    assert normalise(found.out) == (
        "SCORE  CONTEXT  ID  TITLE\n"
        "8  kb  a  Release schedule\n"
        "5  kb  b  Release\n")
    first = cli("query", "release schedule", "--limit", "1", *NS)
    assert normalise(first.out) == "SCORE  CONTEXT  ID  TITLE\n8  kb  a  Release schedule\n"
    assert first.err.startswith("more results: --cursor ")
    cursor = first.err.split("--cursor ")[1].split(" ")[0]
    second = cli("query", "release schedule", "--limit", "1", "--cursor", cursor, "--json", *NS)
    assert [r["record"]["id"] for r in json.loads(second.out)["items"]] == ["b"]
    every = cli("query", "release schedule", "--limit", "1", "--all", "--json", *NS)
    assert [r["record"]["id"] for r in json.loads(every.out)["items"]] == ["a", "b"]
    by_id = cli("query", "--id", "c", "--id", "a", "--json", *NS)
    assert sorted(r["record"]["id"] for r in json.loads(by_id.out)["items"]) == ["a", "c"]
    filtered = cli("query", "--id", "c", "--id", "a", "--source-context", "upstream", "--json",
                   *NS)
    assert [r["record"]["id"] for r in json.loads(filtered.out)["items"]] == ["c"]
    record = json.loads(by_id.out)["items"][-1]["record"]
    assert (record["context"], record["type"], record["revision"]) == ("kb", "knowledge", REV)


def test_stale_index_is_reported_unavailable(cli: Cli, tmp_path: Path) -> None:
    knowledge(cli, "stale", tmp_path)
    assert cli("index", "push", "stale",
               str(records_file(tmp_path / "s.jsonl", RECORDS[:1])), *NS).code == 0
    knowledge_rev = tmp_path / "next.json"
    knowledge_rev.write_text(json.dumps({"id": "ef" * 32, "createdAt": "2026-03-02T09:00:00Z",
                                         "operation": "sync"}))
    assert cli("ctx", "publish", "stale", str(knowledge_rev), *NS).code == 0
    found = cli("query", "release", "--context", "stale", *NS)
    assert (found.code, found.out) == (0, "No records found.\n")
    assert found.err == "unavailable (index does not match the current revision): stale\n"


def test_query_usage_and_service_errors(cli: Cli) -> None:
    assert cli("query", *NS).code == 2
    assert "query text or --id is required" in cli("query", "  ", *NS).err
    over = cli("query", "x", "--limit", "101", *NS)
    assert over.code == 2 and "101 is not in the range 1<=x<=100" in over.err
    hidden = cli("query", "x", "--context", "nope", *NS)
    assert (hidden.code, hidden.err) == (1, "contextctl: context resource not found\n")
    cursor = cli("query", "x", "--cursor", "garbage", *NS)
    assert cursor.err == "contextctl: invalid context resource: invalid query cursor\n"


def test_push_errors(cli: Cli, tmp_path: Path) -> None:
    assert cli("ctx", "create", "plain", *NS).code == 0
    no_revision = cli("index", "push", "plain", str(records_file(tmp_path / "p.jsonl", [])), *NS)
    assert no_revision.code == 1
    assert "plain has no current revision" in no_revision.err
    wrong_type = cli("index", "push", "plain", str(tmp_path / "p.jsonl"), "--revision", REV, *NS)
    assert wrong_type.err == ("contextctl: invalid context resource: query indexes require "
                              "memory or knowledge contexts\n")
    knowledge(cli, "strict", tmp_path)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id":"x","text":"y"}\n{not json\n')
    bad_line = cli("index", "push", "strict", str(broken), *NS)
    assert bad_line.code == 1 and bad_line.err.startswith("contextctl: line 2 is not JSON")
    foreign = cli("index", "push", "strict", str(records_file(
        tmp_path / "f.jsonl", [{"id": "x", "text": "y", "context": "other"}])), *NS)
    assert foreign.err == ("contextctl: invalid context resource: query record identity does "
                           "not match its context\n")


def test_push_from_stdin_with_progress_on_a_terminal(cli: Cli, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    knowledge(cli, "piped", tmp_path)
    import io
    import sys
    data = b"".join(json.dumps(r).encode() + b"\n" for r in RECORDS)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    pushed = cli("index", "push", "piped", "-", *NS, TTY_COMPATIBLE="1")
    assert pushed.code == 0, pushed.err
    assert "uploading" in pushed.err and "100%" in pushed.err
    assert len(json.loads(cli("query", "release", "--context", "piped", "--json",
                              *NS).out)["items"]) == 2
