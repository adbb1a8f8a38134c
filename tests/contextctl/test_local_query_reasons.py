"""``contextctl local query`` says why a local context could not be searched: a local index is
never stale (the records are read from the files as they are now), so the only reason is a
missing record source, named by its file; ``--json`` keeps the bare names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_service.contextctl.main import main


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CS_CONTEXT_HOME", str(tmp_path / "contexts"))
    return tmp_path / "contexts"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["local", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_missing_record_source_is_named_as_the_reason(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, type_ in (("notes", "memory"), ("facts", "knowledge"), ("kb", "knowledge")):
        assert run(capsys, "init", name, "--type", type_)[0] == 0
    (home / "kb" / "knowledge" / "records.jsonl").write_text(
        json.dumps({"id": "a", "title": "Release", "text": "release"}) + "\n", encoding="utf-8")

    code, out, err = run(capsys, "query", "release")
    assert code == 0 and out.splitlines()[1].split()[1:3] == ["kb", "a"]
    assert "does not match the current revision" not in err, err
    assert "unavailable (memory/MEMORY.md does not exist): notes" in err, err
    assert "unavailable (knowledge/records.jsonl does not exist): facts" in err, err

    code, out, _ = run(capsys, "query", "release", "--json")
    assert sorted(json.loads(out)["unavailable"]) == ["facts", "notes"]
