"""``contextctl ingest`` with the messy inputs real users have: outlines nested deeper than a
Markdown parser's default limit, file names holding line breaks and terminal escapes, empty
turns whose time is no time, transcripts with duplicate turn ids, and the same folder read under
other time zones. None needs a service: the passages are what a dry run would publish."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.contextctl.ingestion import chat, html, ingest, markdown, plain
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.discovery import discover
from context_service.contextctl.ingestion.passages import passages
from context_service.contextctl.ingestion.reading import Skipped, read
from context_service.contextctl.ingestion.tokens import counter
from context_service.contextctl.main import main


def outline(depth: int) -> str:
    """A list nested ``depth`` levels deep, as outliners and tables of contents write them."""
    return "".join("  " * level + f"- level {level}\n" for level in range(depth))


# --- Markdown nested deeper than markdown-it's CommonMark preset allows ----------------------


@pytest.mark.parametrize("depth", [10, 12, 49])
def test_a_deeply_nested_outline_keeps_the_headings_after_it(depth: int) -> None:
    """markdown-it's CommonMark preset stops at 20 levels of nesting (10 of lists) and skips
    the rest of the text from there: everything after such an outline was one list item with
    no heading, its titles and ids wrong."""
    text = f"# Plan\n\n{outline(depth)}\nAfter the outline.\n\n# Next\n\n## Step\n\nBody.\n"
    doc = markdown.parse(text, "a.md")
    assert [(b.heading, b.text) for b in doc.blocks] == [
        (("Plan",), outline(depth).rstrip("\n")), (("Plan",), "After the outline."),
        (("Next", "Step"), "Body.")]


def test_an_outline_too_deep_to_read_is_refused_not_cut(tmp_path: Path) -> None:
    """Deeper than the parser reads, the file is set aside with the documented reason rather
    than published with its later sections folded into one list item."""
    (tmp_path / "deep.md").write_text(f"# Plan\n\n{outline(50)}\n# Next\n\nBody.\n")
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    got = read(discover([tmp_path]), counter(), 256)
    assert got.failed == [Skipped("deep.md", "nested too deeply to read")]
    assert [e.name for e in got.entries] == ["a.md"]


# --- names that are not one printable line ---------------------------------------------------


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    """``contextctl`` in this process, offline: (exit code, standard error)."""
    monkeypatch.setenv("CS_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("CS_SUBJECT", "user:alice")

    def call(*args: str) -> tuple[int, str]:
        capsys.readouterr()
        code = main(list(args))
        return code, capsys.readouterr().err

    yield call


FORGED = "notes\ncontextctl: published 2 files\x1b[2K"


def test_a_file_name_cannot_forge_lines_of_the_error(tmp_path: Path, run: Any) -> None:
    """A file someone put in a shared folder is named in the error as one escaped line: its
    line break does not start a line of its own, its escape does not reach the terminal."""
    (tmp_path / "good.md").write_text("# A\n\ntext\n")
    (tmp_path / f"{FORGED}.md").write_text("")
    code, err = run("ingest", str(tmp_path), "--context", "kb", "--dry-run")
    assert code == 1
    assert err.splitlines() == [
        "contextctl: 1 of 2 files cannot be ingested; nothing was published (--skip-bad "
        "publishes the others):",
        "  notes\\ncontextctl: published 2 files\\u001b[2K.md: empty file"]


def test_an_ignored_file_name_cannot_forge_lines_of_the_note(tmp_path: Path, run: Any) -> None:
    (tmp_path / "good.md").write_text("# A\n\ntext\n")
    (tmp_path / f"{FORGED}.png").write_bytes(b"\x89PNG")
    code, err = run("ingest", str(tmp_path), "--context", "kb", "--dry-run")
    assert code == 0
    assert err.splitlines() == [
        "ignored 1 file(s) that are not documents or transcripts: "
        "notes\\ncontextctl: published 2 files\\u001b[2K.png"]


def test_a_named_file_cannot_forge_lines_of_the_error(tmp_path: Path, run: Any) -> None:
    """``contextctl ingest notes/*`` names every file of the folder, whoever wrote them."""
    (tmp_path / f"{FORGED}.png").write_bytes(b"\x89PNG")
    for name in (f"{FORGED}.png", f"gone{FORGED}.md"):
        code, err = run("ingest", str(tmp_path / name), "--context", "kb", "--dry-run")
        assert code == 1
        assert len(err.splitlines()) == 1 and "\x1b" not in err, err
        assert "notes\\ncontextctl: published 2 files\\u001b[2K" in err


# --- transcripts ----------------------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   "])
def test_an_empty_message_whose_time_is_no_time_still_refuses_the_file(content: str) -> None:
    """Docs: a time that is none of the forms read refuses the file; an empty turn (dropped,
    having no text) was let through with any time at all."""
    messages = [{"role": "user", "content": content, "time": "yesterday"},
                {"role": "bot", "content": "Hello.", "time": "2023-05-08T13:56:00Z"}]
    with pytest.raises(Unreadable, match=r"^message 1: time 'yesterday' is not a date and time$"):
        chat.parse_json(json.dumps(messages), "c.json")
    with pytest.raises(Unreadable, match=r"^message 1: time 'yesterday' is not a date and time$"):
        chat.parse_jsonl("\n".join(json.dumps(m) for m in messages), "c.jsonl")


def test_duplicate_turn_ids_and_sample_ids_still_give_unique_record_ids(tmp_path: Path) -> None:
    turn = {"speaker": "Ana", "text": "Hello.", "dia_id": "D1:1"}
    samples = [{"sample_id": "conv", "conversation": {"session_1": [turn, turn, turn]}},
               {"sample_id": "conv", "conversation": {"session_1": [turn]}}]
    (tmp_path / "locomo.json").write_text(json.dumps(samples))
    ids = [r["id"] for r in ingest([tmp_path], context="kb", dry_run=True).records]
    assert ids == [f"locomo.json#conv/d1-1:{n}" for n in range(1, 5)]


def test_the_same_folder_gives_the_same_records_in_any_time_zone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A time without a zone is UTC, not the machine's local time."""
    (tmp_path / "c.jsonl").write_text("\r\n".join(json.dumps(m) for m in [
        {"role": "user", "content": "a", "time": "2023-05-08 13:56"},
        {"role": "bot", "content": "b", "time": 1683553000},
        {"role": "user", "content": "c", "time": "2023-05-08T13:56:00+05:30"}]))
    seen = []
    for zone in ("UTC", "Asia/Kolkata", "America/St_Johns"):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        seen.append(ingest([tmp_path], context="kb", dry_run=True).records)
    monkeypatch.undo()
    time.tzset()
    assert seen[0] == seen[1] == seen[2]
    assert [r.get("validFrom") for r in seen[0]] == [
        "2023-05-08T13:56:00Z", "2023-05-08T13:36:40Z", "2023-05-08T08:26:00Z"]


SAMPLE = {"sample_id": "conv-1", "conversation": {
    "session_1": [{"speaker": "Ana", "text": "I adopted a greyhound.", "dia_id": "D1:1"}]}}


@pytest.mark.parametrize("broken", [{"sample_id": "conv-2"},
                                    {"sample_id": "conv-2", "conversation": [1]}])
def test_a_locomo_file_with_one_broken_sample_is_an_error_not_ignored(
        tmp_path: Path, broken: dict[str, Any]) -> None:
    """One malformed sample made the whole file "not a transcript", left out of a folder
    without a word: every good conversation in it was lost silently."""
    (tmp_path / "locomo.json").write_text(json.dumps([SAMPLE, broken]))
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    got = read(discover([tmp_path]), counter(), 256)
    assert (got.failed, got.ignored) == (
        [Skipped("locomo.json", "sample 2 has no conversation")], [])


def test_an_empty_locomo_turn_is_left_out_as_an_empty_message_is() -> None:
    """An empty message gives no passage; an empty LoCoMo turn gave one reading ``Ana: ``."""
    turns = [{"speaker": "Ana", "text": " ", "dia_id": "D1:1"},
             {"speaker": "Bo", "text": "", "dia_id": "D1:2", "blip_caption": "a dog"},
             {"speaker": "Ana", "text": "Nice.", "dia_id": "D1:3"}]
    doc = chat.parse_json(json.dumps({"sample_id": "c", "conversation": {"session_1": turns}}),
                          "l.json")
    assert [(b.anchor, b.text) for b in doc.blocks] == [
        ("c/d1-2", "Bo: [shares a photo: a dog]"), ("c/d1-3", "Ana: Nice.")]



def test_a_transcript_written_on_windows_gives_the_records_of_one_written_elsewhere(
        tmp_path: Path) -> None:
    """Line ends end lines in every format: a message typed on Windows (``\\r\\n`` inside its
    text) is the same passage, with the same tokens, as the one typed elsewhere."""
    turns = [{"role": "user", "content": "First line.{end}Second line."},
             {"role": "bot", "content": "One.{end}{end}Two."}]
    sample = {"sample_id": "c", "conversation": {"session_1": [
        {"speaker": "Ana", "text": "Hi.{end}There.", "dia_id": "D1:1"}]}}
    seen = []
    for end in ("\n", "\r\n", "\r"):
        folder = tmp_path / repr(end).strip("'").replace("\\", "")
        folder.mkdir()
        (folder / "c.json").write_text(json.dumps(turns).replace("{end}", json.dumps(end)[1:-1]))
        (folder / "c.jsonl").write_text("\n".join(
            json.dumps(t).replace("{end}", json.dumps(end)[1:-1]) for t in turns))
        (folder / "l.json").write_text(json.dumps(sample).replace("{end}",
                                                                  json.dumps(end)[1:-1]))
        got = read(discover([folder]), counter(), 256)
        seen.append([(p.id, p.text, p.tokens) for p in got.passages])
    assert seen[0] == seen[1] == seen[2]
    assert seen[0][0][1] == "user: First line.\nSecond line."

# --- one paragraph of megabytes --------------------------------------------------------------


def test_a_log_without_blank_lines_or_sentence_ends_is_cut_in_bounded_memory() -> None:
    """A log saved as text is one paragraph without a sentence end: it was cut into passages
    from the tokenizer's encoding of the whole of it, some 280 times the file at its peak (a
    1.8 MB log took 500 MB; traced, 85 times the text here)."""
    text = "\n".join(f"2026-12-07 01:{n // 60 % 60:02d}:{n % 60:02d} INFO request "
                     f"{n * 7919 % 10**6} served in {n % 300} ms" for n in range(4000))
    document = plain.parse(text, "app.txt")
    counter().count("warm the tokenizer up")
    tracemalloc.start()
    try:
        made = passages(document, "app.txt", counter(), 256)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert all(p.tokens <= 256 for p in made)
    assert " ".join(p.text for p in made).split() == text.split()  # nothing lost
    assert peak < 40 * len(text), (peak, len(text))  # some 20 times now


TEXTS = st.lists(st.sampled_from(["a", "b", " ", "  ", "\n", "\r", "\t", "東", "🙂", "é",
                                  "e\u0301", "\u2581", "-", ".", "\u2028", "the", " the",
                                  "</s>", "x1"]), max_size=40).map("".join)


@given(TEXTS)
def test_token_starts_read_word_by_word_are_the_tokenizers(text: str) -> None:
    whole = [start for start, _ in counter()._tokenizer.encode(
        text, add_special_tokens=False).offsets]
    assert list(counter()._token_starts(text)) == whole


def test_a_locomo_turn_title_carries_its_session_date_as_written() -> None:
    """Packs score words (a title three times), never ``validFrom``: without the session's date
    in a turn's words, "when did ..." questions found LoCoMo turns less often (recall@5 0.675
    against 0.693 with it, served on the development half)."""
    sample = {"sample_id": "conv-1", "conversation": {
        "session_1_date_time": "1:56 pm on 8 May, 2023", "session_2_date_time": "",
        "session_1": [{"speaker": "Ana", "text": "I adopted a greyhound.", "dia_id": "D1:1"}],
        "session_2": [{"speaker": "Bo", "text": "Nice.", "dia_id": "D2:1"}]}}
    records = chat.parse_json(json.dumps(sample), "l.json").blocks
    assert [(b.heading, b.valid_from) for b in records] == [
        (("conv-1", "Session 1 (1:56 pm on 8 May, 2023)"), "2023-05-08T13:56:00Z"),
        (("conv-1", "Session 2"), None)]


# --- HTML -----------------------------------------------------------------------------------


def test_an_svg_icons_title_is_not_the_pages_title() -> None:
    """A page without a ``<title>`` of its own (a saved fragment, a mail) titled its passages
    with the label of its first inline SVG icon; a browser's ``document.title`` ignores it."""
    page = ("<html><body><svg><title>chevron-down</title><path d='M0'/></svg>"
            "<p>Intro text.</p><h1>Guide</h1><p>Body.</p></body></html>")
    doc = html.parse(page, "p.html")
    assert (doc.title, [b.text for b in doc.blocks]) == ("p.html", ["Intro text.", "Body."])
    titled = html.parse("<title>Real</title>" + page, "p.html")
    assert titled.title == "Real"
