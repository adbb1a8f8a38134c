"""A file name holding a line or paragraph separator (U+2028, U+2029) in ``contextctl ingest``'s
messages and tables.

The day's change escapes names with line breaks in every message ingest writes, so that a name
another user chose cannot start a line of its own. U+2028 and U+2029 are line breaks too to log
viewers and to ``str.splitlines`` (which ``output.table`` splits its rendering with, and which
the event tail's ``--format json`` now escapes them for): left raw, such a name still forged a
line of the error, and split its own row of the skipped-files table in two."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl import output
from context_service.contextctl.main import main

FORGED = "notes\u2028contextctl: published 2 files\u2029"


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """``contextctl`` in this process, offline: (exit code, standard output, standard error)."""
    monkeypatch.setenv("CS_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CS_SUBJECT", "user:alice")

    def call(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    yield call


def test_a_separator_in_a_file_name_cannot_forge_a_line_of_the_error(
        tmp_path: Path, run: Any) -> None:
    (tmp_path / "good.md").write_text("# A\n\ntext\n")
    (tmp_path / f"{FORGED}.md").write_text("")
    code, _, err = run("ingest", str(tmp_path), "--context", "kb", "--dry-run")
    assert code == 1
    assert err.splitlines() == [
        "contextctl: 1 of 2 files cannot be ingested; nothing was published (--skip-bad "
        "publishes the others):",
        "  notes\\u2028contextctl: published 2 files\\u2029.md: empty file"]


def test_a_separator_in_a_skipped_file_name_keeps_its_row_whole(
        tmp_path: Path, run: Any) -> None:
    (tmp_path / "good.md").write_text("# A\n\ntext\n")
    (tmp_path / f"{FORGED}.md").write_text("")
    code, out, _ = run("ingest", str(tmp_path), "--context", "kb", "--dry-run", "--skip-bad")
    assert code == 0
    skipped = out[out.index("Skipped (cannot be read):"):].splitlines()
    assert len(skipped) == 3, skipped  # the title, the header, one row
    assert skipped[2].startswith("  notes\\u2028contextctl: published"), skipped


def test_a_table_cell_is_one_line_to_every_reader_of_lines(
        capsys: pytest.CaptureFixture[str]) -> None:
    output.table(["NAME", "REASON"], [[f"a{c}b", "x"] for c in ("\u2028", "\u2029")], "")
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 3, rows
