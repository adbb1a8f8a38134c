"""``contextctl local ...`` as a user drives it, in this process through the real entry point
(its exit codes and one-line errors), with ``CS_CONTEXT_HOME`` in a temporary directory: no
service is involved."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.main import main

Run = tuple[int, str, str]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CS_CONTEXT_HOME", str(tmp_path / "contexts"))
    return tmp_path / "contexts"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    code = main(["local", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def as_json(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    code, out, err = run(capsys, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_init_capture_status_and_revisions(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "init", "notes", "--type", "memory")
    assert (code, out) == (0, f"created local context notes (memory) in {home / 'notes'}\n")
    (home / "notes" / "memory" / "MEMORY.md").write_bytes(b"- fact\n")
    expected = hashlib.sha256(
        b"type\x00memory\x00memory/MEMORY.md\x00" + hashlib.sha256(b"- fact\n").hexdigest().encode()
        + b"\x007\x00").hexdigest()

    status = as_json(capsys, "status", "notes")
    assert status == {"name": "notes", "type": "memory", "root": str(home / "notes"),
                      "contentRevision": expected, "changed": True, "files": 1, "bytes": 7}
    code, out, _ = run(capsys, "capture", "notes", "--param", "k=v", "--source",
                       f"state-a:state:{'1' * 64}")
    assert (code, out) == (0, f"captured revision {expected} of notes (1 file, 7 bytes)\n")
    code, out, _ = run(capsys, "capture", "notes")
    assert (code, out) == (0, f"notes unchanged: revision {expected} is current\n")
    again = as_json(capsys, "capture", "notes")
    assert again["appended"] is False and again["revision"]["id"] == expected

    code, out, _ = run(capsys, "status", "notes")
    assert "Changed:          no" in out and f"Current revision: {expected}" in out
    revisions = as_json(capsys, "revisions", "notes")["items"]
    assert [(r["id"], r["operation"], r["producer"], r["parameters"], r["sources"])
            for r in revisions] == [(expected, "capture", "contextctl", {"k": "v"},
                                     [{"context": "state-a", "type": "state",
                                       "revision": "1" * 64}])]
    code, out, _ = run(capsys, "revisions", "notes")
    assert out.splitlines()[0].split() == ["ID", "CREATED", "OPERATION", "PRODUCER", "FILES",
                                           "BYTES"]
    assert out.splitlines()[1].split()[0] == expected[:12]
    listed = as_json(capsys, "list")
    assert listed == {"items": [{"name": "notes", "type": "memory", "root": str(home / "notes"),
                                 "currentRevision": expected}]}


def test_records_and_query(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "init", "kb", "--type", "knowledge")[0] == 0
    assert run(capsys, "init", "mem", "--type", "memory")[0] == 0
    assert run(capsys, "init", "empty", "--type", "memory")[0] == 0
    (home / "kb" / "knowledge" / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "a", "title": "Release schedule", "text": "Friday release schedule"},
        {"id": "b", "title": "Release", "text": "release schedule"},
        {"id": "c", "title": "Unrelated", "text": "nothing here"}]), encoding="utf-8")
    (home / "mem" / "memory" / "MEMORY.md").write_text("# Release\n\n- plans\n", encoding="utf-8")

    code, out, _ = run(capsys, "records", "mem")
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [r["text"] for r in lines] == ["Release", "plans"]
    assert lines[0]["file"] == "memory/MEMORY.md" and len(lines[0]["id"]) == 32
    code, _, err = run(capsys, "records", "empty")
    assert (code, err) == (1, "contextctl: empty has no records: memory/MEMORY.md does not "
                              "exist\n")

    found = as_json(capsys, "query", "release schedule", "--context", "kb", "--context",
                    "empty")
    assert [(i["score"], i["record"]["id"]) for i in found["items"]] == [(8, "a"), (5, "b")]
    assert found["unavailable"] == ["empty"]
    assert list(found) == ["items", "unavailable"]
    code, out, err = run(capsys, "query", "release schedule", "--limit", "2")
    rows = [line.split()[:3] for line in out.splitlines()]
    assert code == 0 and rows[0] == ["SCORE", "CONTEXT", "ID"]
    assert [row[0] for row in rows[1:]] == ["8", "5"]
    assert "unavailable (memory/MEMORY.md does not exist): empty" in err
    only = as_json(capsys, "query", "release", "--type", "memory")
    assert [i["record"]["context"] for i in only["items"]] == ["mem"]
    assert as_json(capsys, "query", "--id", "c")["items"][0]["score"] == 1


def test_snapshot_and_restore(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "init", "ws", "--type", "workspace")
    target = home / "ws" / "artifacts" / "report.txt"
    target.write_bytes(b"v1")
    taken = as_json(capsys, "snapshot", "ws", "--name", "v1", "--label", "team=a")
    assert (taken["name"], taken["labels"], taken["files"]) == ("v1", {"team": "a"}, 1)
    code, out, _ = run(capsys, "snapshot", "ws", "--name", "keep", "--protect")
    assert (code, out) == (0, "created snapshot keep of ws (1 file, 2 bytes)\n")
    target.write_bytes(b"v2, longer")

    done = as_json(capsys, "restore", "ws", "v1")
    assert target.read_bytes() == b"v1"
    assert done["restored"] == "v1" and done["safetySnapshot"].startswith("pre-restore-")
    listed = as_json(capsys, "snapshots", "ws")["items"]
    assert {s["name"]: s.get("protected", False) for s in listed} == {
        "v1": False, "keep": True, done["safetySnapshot"]: True}
    # oldest first, the service's order: (createdAt to the second, name)
    assert listed == sorted(listed, key=lambda s: (s["createdAt"], s["name"]))
    code, out, _ = run(capsys, "snapshots", "ws")
    assert out.splitlines()[0].split()[:3] == ["NAME", "REVISION", "CONTENT"]
    code, out, _ = run(capsys, "restore", "ws", done["safetySnapshot"])
    assert code == 0 and out.startswith(f"restored ws from {done['safetySnapshot']} (revision ")
    assert target.read_bytes() == b"v2, longer"


@pytest.mark.parametrize(("args", "code", "message"), [
    (("status", "nope"), 1, "contextctl: local context not found: nope\n"),
    (("init", "Bad", "--type", "memory"), 1,
     "contextctl: name must be a lowercase Kubernetes name no longer than 50 characters\n"),
    (("query", "x", "--context", "nope"), 1, "contextctl: local context not found: nope\n"),
    (("restore", "ws", "missing"), 1, "contextctl: local snapshot not found: missing\n"),
    (("snapshot", "ws", "--name", "Bad_Name"), 1,
     "contextctl: snapshot must be a Kubernetes name\n"),
])
def test_errors_are_one_line_and_exit_1(home: Path, capsys: pytest.CaptureFixture[str],
                                        args: tuple[str, ...], code: int, message: str) -> None:
    run(capsys, "init", "ws", "--type", "workspace")
    assert run(capsys, *args)[::2] == (code, message)


def test_a_symlink_is_reported_by_name(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "init", "ws", "--type", "workspace")
    (home / "ws" / "harnesses" / "link").symlink_to(home)
    code, _, err = run(capsys, "capture", "ws")
    assert code == 1 and err.startswith("contextctl: not a regular file: harnesses/link")
    assert len(err.splitlines()) == 1


def test_usage_errors_exit_2(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "init", "ws", "--type", "workspace")
    assert run(capsys, "capture", "ws", "--param", "novalue")[0] == 2
    assert run(capsys, "capture", "ws", "--source", "a:b")[0] == 2
    assert run(capsys, "query")[0] == 2
    assert run(capsys, "init", "other")[0] == 2  # --type is required
    assert run(capsys, "query", "x", "--limit", "101")[0] == 2


def test_the_program_names_the_setting_in_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "CS_CONTEXT_HOME   local contexts of the local commands (default ~/.contexts)" in out
    assert any(line.split()[:1] == ["local"] for line in out.splitlines())
