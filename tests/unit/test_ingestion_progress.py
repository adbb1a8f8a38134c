"""The reading bar of ``contextctl ingest`` (the ``Progress`` port, recorded here): it moves while
one large file is parsed and cut (a Markdown file by slice, a PDF by page), advances in all
exactly the bytes it was given as its total (also when a file grows after it was counted or
cannot be read), costs one move per small file, and changes no passage. On the command line it
is drawn on standard error while a dry run reads, and only when standard error is a terminal."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.ingestion import api, ingest, markdown
from context_service.contextctl.ingestion.discovery import discover
from context_service.contextctl.ingestion.reading import read
from context_service.contextctl.ingestion.tokens import counter
from context_service.contextctl.main import main
from tests.contextctl.ingest_fixture import pdf_bytes


class Recorder:
    """The ``Progress`` port: each task's total and the moves it was advanced by, in order."""

    def __init__(self) -> None:
        self.tasks: dict[str, tuple[int | None, list[int]]] = {}

    def task(self, description: str, total: int | None) -> Callable[[int], None]:
        moves: list[int] = []
        self.tasks[description] = (total, moves)
        return moves.append


def chapters(count: int) -> str:
    return "".join(f"## Chapter {n}\n\nThe ledger entry {n} records a transfer of the orchard "
                   f"service.\n\n- item one {n}\n- item two\n\n```\ncode {n}\n```\n\n"
                   for n in range(count))


def report_pages(count: int) -> bytes:
    return pdf_bytes([[f"Page {n} line {line}: the orchard ledger keeps every transfer."
                       for line in range(40)] for n in range(count)])


@pytest.fixture
def small_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    # slices of 32 KiB over some 800 KB stand for 256 KiB over a few megabytes
    monkeypatch.setattr(markdown, "SLICE", 1 << 15)


def moves_reading(path: Path) -> list[int]:
    moves: list[int] = []
    read(discover([path]), counter(), 256, moves.append)
    return moves


# --- one large file moves the bar while it is parsed and cut ------------------------------------


@pytest.mark.usefixtures("small_slices")
def test_a_markdown_file_of_many_slices_moves_the_bar_before_it_ends(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text(chapters(8_000))
    moves = moves_reading(big)
    assert len(moves) >= 4, moves  # not one move once the whole file is done
    assert all(move > 0 for move in moves)
    assert sum(moves) == big.stat().st_size


def test_a_pdf_of_many_pages_moves_the_bar_before_it_ends(tmp_path: Path) -> None:
    report = tmp_path / "report.pdf"
    report.write_bytes(report_pages(120))
    moves = moves_reading(report)
    assert len(moves) >= 3, moves
    assert all(move > 0 for move in moves)
    assert sum(moves) == report.stat().st_size


SENTENCE = "The orchard ledger keeps every transfer between the regions of the service."


@pytest.mark.parametrize(("name", "content"), [
    ("notes.txt", "\n\n".join(f"{n}. {SENTENCE}" for n in range(6_000))),
    ("page.html", "<html><body><main>" + "".join(
        f"<section><h2>Part {n}</h2><p>{SENTENCE}</p></section>" for n in range(4_000))
        + "</main></body></html>"),
    ("chat.jsonl", "\n".join(json.dumps({"role": "user", "content": f"{n}. {SENTENCE}"})
                             for n in range(4_000))),
    ("chat.json", json.dumps({"messages": [{"role": "user", "content": f"{n}. {SENTENCE}"}
                                           for n in range(4_000)]})),
    ("locomo.json", json.dumps([{"sample_id": f"conv-{n}", "conversation": {
        f"session_{s}": [{"speaker": "Ana", "text": f"{s}. {SENTENCE}"}] * 20
        for s in range(1, 11)}} for n in range(20)])),
])
def test_every_format_moves_the_bar_before_it_ends(tmp_path: Path, name: str,
                                                    content: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    moves = moves_reading(path)
    assert len(moves) >= 3, moves
    assert all(move > 0 for move in moves)
    assert sum(moves) == path.stat().st_size


@pytest.mark.usefixtures("small_slices")
def test_the_passages_are_the_same_with_and_without_a_bar(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_text(chapters(8_000))
    (tmp_path / "report.pdf").write_bytes(report_pages(120))
    found = discover([tmp_path])
    quiet = read(found, counter(), 256)
    shown = read(found, counter(), 256, lambda _: None)
    assert {p.file for p in quiet.passages} == {"big.md", "report.pdf"}
    assert shown.passages == quiet.passages  # ids, titles, texts, tokens, times
    assert shown.entries == quiet.entries  # and so the revision


# --- the total is right: many small files, a file that grows or cannot be read -----------------


def test_many_small_files_are_one_bar_moved_once_a_file(tmp_path: Path) -> None:
    for n in range(300):
        (tmp_path / f"note-{n:03}.md").write_text(f"# Note {n}\n\nThe ledger entry {n}.\n")
    recorder = Recorder()
    ingest([tmp_path], context="kb", dry_run=True, progress=recorder)
    total, moves = recorder.tasks["reading"]
    assert list(recorder.tasks) == ["reading"]
    assert len(moves) == 300
    assert total == sum(moves) == sum(f.stat().st_size for f in tmp_path.iterdir())


def test_a_file_that_grows_after_it_was_counted_fills_the_bar_exactly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log.md"
    log.write_text("# Log\n\nThe first entry.\n")
    (tmp_path / "guide.md").write_text("# Guide\n\nRead this first.\n")

    def read_after_a_write(*args: Any) -> Any:  # a log being written while it is ingested
        with log.open("a") as more:
            more.write("\nThe second entry.\n")
        return read(*args)

    monkeypatch.setattr(api, "read", read_after_a_write)
    recorder = Recorder()
    ingest([tmp_path], context="kb", dry_run=True, progress=recorder)
    total, moves = recorder.tasks["reading"]
    assert sum(moves) == total


def test_a_file_that_cannot_be_read_still_fills_the_bar(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n\nRead this first.\n")
    locked = tmp_path / "locked.md"
    locked.write_text("# Locked\n\nNo permission to read this.\n")
    read_bytes = Path.read_bytes

    def refused(path: Path) -> bytes:  # as chmod 000 does (the tests may run as root)
        if path.name == "locked.md":
            raise PermissionError(13, "Permission denied", str(path))
        return read_bytes(path)

    monkeypatch.setattr(Path, "read_bytes", refused)
    recorder = Recorder()
    report = ingest([tmp_path], context="kb", dry_run=True, skip_bad=True, progress=recorder)
    assert [s.file for s in report.skipped] == ["locked.md"]
    total, moves = recorder.tasks["reading"]
    assert sum(moves) == total == sum(f.stat().st_size for f in tmp_path.iterdir())


# --- the command's bar: drawn on a terminal only, also in a dry run -----------------------------


@pytest.fixture
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


@contextlib.contextmanager
def stderr_on_a_terminal() -> Iterator[list[bytes]]:
    """Standard error on a pseudo-terminal (inside a test: pytest puts its own back at each
    phase); the list holds what was drawn on it once the block has ended."""
    leader, follower = os.openpty()
    chunks: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal was closed
                return
            if not chunk:
                return
            chunks.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    before = sys.stderr
    with open(follower, "w", encoding="utf-8", closefd=True) as stream:
        sys.stderr = stream
        try:
            yield chunks
        finally:
            sys.stderr = before
    reader.join(timeout=30)
    os.close(leader)


@pytest.mark.usefixtures("plain_environment")
def test_a_dry_run_draws_the_reading_bar_on_a_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "guide.md").write_text(chapters(20))
    with stderr_on_a_terminal() as drawn:
        assert main(["ingest", str(tmp_path), "--context", "kb", "--dry-run"]) == 0
    assert "guide.md#chapter-0:1" in capsys.readouterr().out
    assert b"reading" in b"".join(drawn)


@pytest.mark.usefixtures("plain_environment")
def test_no_bar_is_drawn_when_standard_error_is_not_a_terminal_even_with_forced_color(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "guide.md").write_text(chapters(20))
    monkeypatch.setenv("FORCE_COLOR", "1")  # as CI services set it: colour, not a terminal
    assert main(["ingest", str(tmp_path), "--context", "kb", "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert "guide.md#chapter-0:1" in captured.out
    assert "reading" not in captured.err
    assert "\x1b" not in captured.err


def test_ctrl_c_while_reading_stops_with_130_and_no_word_of_an_upload(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "guide.md").write_text(chapters(20))

    def interrupted(*args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(markdown, "parse", interrupted)
    assert main(["ingest", str(tmp_path), "--context", "kb", "--dry-run"]) == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip() == "contextctl: interrupted"
