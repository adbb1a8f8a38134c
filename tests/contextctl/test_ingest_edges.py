"""Edge cases of ``contextctl ingest``: line endings and line separators other than ``\\n``, file
names and texts that are not valid Unicode, one file reached by two paths, folders that cannot
be listed, deeply nested input, transcripts with one bad message, big inputs at the largest cap,
and a record too large for a part (refused before anything is published)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path, PurePath
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.contextctl.client import CommandError
from context_service.contextctl.ingestion import (
    chat,
    formats,
    html,
    ingest,
    markdown,
    plain,
    tokens,
)
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.discovery import discover
from context_service.contextctl.ingestion.passages import passages
from context_service.contextctl.ingestion.reading import NOT_REGULAR, Skipped, read
from context_service.contextctl.ingestion.tokens import TokenCounter, counter
from tests.contextctl.conftest import Cli


def dry(paths: list[Path], **options: Any) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = ingest(paths, context="kb", dry_run=True, **options).records
    return records


def failed(root: Path) -> list[Skipped]:
    return read(discover([root]), counter(), 256).failed


# --- line endings and separators ------------------------------------------------------------


def test_markdown_front_matter_with_crlf_is_left_out() -> None:
    text = "---\r\ntitle: secret front matter\r\n---\r\nIntro.\r\n\r\n# Guide\r\n\r\nBody.\r\n"
    doc = markdown.parse(text, "a.md")
    assert [(b.heading, b.text) for b in doc.blocks] == [((), "Intro."), (("Guide",), "Body.")]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x0c", "\x85", "\x1c", "\x0b"])
def test_markdown_keeps_text_around_other_line_separators(separator: str) -> None:
    text = f"Alpha{separator}beta.\n\nGamma.\n\n# Head\n\nDelta.\n"
    doc = markdown.parse(text, "a.md")
    assert [(b.heading, b.text) for b in doc.blocks] == [
        ((), f"Alpha{separator}beta."), ((), "Gamma."), (("Head",), "Delta.")]


def test_markdown_with_old_mac_line_ends() -> None:
    doc = markdown.parse("Intro.\r\r# Head\r\rBody one.\r\rBody two.\r", "a.md")
    assert [(b.heading, b.text) for b in doc.blocks] == [
        ((), "Intro."), (("Head",), "Body one."), (("Head",), "Body two.")]


def test_plain_text_paragraphs_with_old_mac_line_ends() -> None:
    assert [b.text for b in plain.parse("one\rtwo\r\rthree\r", "a.txt").blocks] == [
        "one\ntwo", "three"]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\x85"])
def test_jsonl_message_holding_a_line_separator(separator: str) -> None:
    lines = [json.dumps({"role": "user", "content": f"one{separator}two"}, ensure_ascii=False),
             json.dumps({"role": "bot", "content": "three"})]
    doc = chat.parse_jsonl("\r\n".join(lines) + "\r\n", "c.jsonl")
    assert [(b.anchor, b.text) for b in doc.blocks] == [
        ("m1", f"user: one{separator}two"), ("m2", "bot: three")]


def test_jsonl_error_names_the_right_line() -> None:
    lines = [json.dumps({"role": "u", "content": "a\u2028b"}, ensure_ascii=False), "{oops"]
    with pytest.raises(Unreadable, match=r"^line 2 is not JSON"):
        chat.parse_jsonl("\n".join(lines), "c.jsonl")


# --- transcripts ----------------------------------------------------------------------------


def test_locomo_turn_with_role_and_content() -> None:
    sample = {"sample_id": "s", "conversation": {"session_1": [
        {"role": "Ana", "content": "Hello there.", "dia_id": "D1:1"}]}}
    doc = chat.parse_json(json.dumps(sample), "l.json")
    assert [(b.anchor, b.text) for b in doc.blocks] == [("s/d1-1", "Ana: Hello there.")]


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:30:00-01:00"])
def test_time_outside_the_utc_calendar_is_refused_with_its_reason(value: str) -> None:
    with pytest.raises(Unreadable, match=r"^message 1: time .* is not a date and time"):
        chat.parse_json(json.dumps([{"role": "u", "content": "x", "time": value}]), "c.json")


@pytest.mark.parametrize(("name", "text", "reason"), [
    ("c.json", json.dumps([{"role": "u", "content": "fine"}, {"role": "bot", "content": None}]),
     "message 2 has no role and content"),
    ("c.json", json.dumps({"messages": [{"role": "u", "content": "fine"}, {"x": 1}]}),
     "message 2 has no role and content"),
    ("c.jsonl", json.dumps({"role": "u", "content": "fine"}) + "\n" + json.dumps({"x": 1}),
     "line 2 is not a message with role and content"),
])
def test_transcript_with_one_bad_message_is_an_error_not_ignored(
        tmp_path: Path, name: str, text: str, reason: str) -> None:
    (tmp_path / name).write_text(text)
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    got = read(discover([tmp_path]), counter(), 256)
    assert (got.failed, got.ignored) == ([Skipped(name, reason)], [])


def test_json_that_is_no_transcript_at_all_is_still_ignored_in_a_folder(tmp_path: Path) -> None:
    (tmp_path / "settings.json").write_text(json.dumps([{"x": 1}, {"y": 2}]))
    (tmp_path / "rows.jsonl").write_text('{"x": 1}\n{"y": 2}\n')
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    got = read(discover([tmp_path]), counter(), 256)
    assert (got.failed, got.ignored) == ([], ["rows.jsonl", "settings.json"])


# --- text that is not valid Unicode ---------------------------------------------------------


def test_lone_surrogate_in_a_transcript_is_refused_with_its_reason(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text('[{"role": "u", "content": "cut \\ud83d emoji"}]')
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    with pytest.raises(CommandError) as refused:
        dry([tmp_path])
    assert "\n  c.json: text holds a lone surrogate (U+D83D), not Unicode" in str(refused.value)
    assert [r["file"] for r in dry([tmp_path], skip_bad=True)] == ["a.md"]


def test_only_a_byte_order_mark_is_an_empty_file() -> None:
    for data in (b"\xef\xbb\xbf", b"\xef\xbb\xbf \r\n"):
        with pytest.raises(Unreadable, match=r"^empty file$"):
            formats.parse(PurePath("a.md"), data)


def test_invalid_utf8_after_a_byte_order_mark_names_the_byte_of_the_file() -> None:
    with pytest.raises(Unreadable, match=r"^invalid UTF-8 at byte 6$"):
        formats.parse(PurePath("a.md"), b"\xef\xbb\xbfok \xff")


# --- file names and paths -------------------------------------------------------------------


def test_file_name_that_is_not_utf8_is_named_and_refused(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# A\n\ntext\n")
    for raw, data in ((b"caf\xe9.md", b"# B\n\nmore\n"), (b"logo\xff.png", b"png")):
        with open(os.path.join(os.fsencode(tmp_path), raw), "wb") as file:
            file.write(data)
    assert failed(tmp_path) == [Skipped("caf\ufffd.md", "file name is not UTF-8")]
    got = ingest([tmp_path], context="kb", dry_run=True, skip_bad=True)
    assert [r["file"] for r in got.records] == ["good.md"]
    assert got.ignored == ["logo\ufffd.png"]
    json.dumps(got.as_json(), ensure_ascii=False).encode()  # printable


def test_one_file_reached_by_two_paths_is_read_once(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "sub" / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "link").symlink_to(docs)
    alone = dry([docs])
    for paths in ([docs, tmp_path / "link"], [docs, docs / "sub" / ".." / ".." / "docs"],
                  [docs / "sub" / ".." / "sub" / "a.md", docs / "sub" / "a.md"]):
        found = discover(paths)
        assert len(found.sources) == 1, paths
    assert dry([docs, tmp_path / "link"]) == alone


def test_a_file_named_and_in_a_named_folder_is_named_in_any_order(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "schema.json").write_text(json.dumps({"type": "object"}))
    for paths in ([tmp_path, tmp_path / "schema.json"], [tmp_path / "schema.json", tmp_path]):
        assert [(s.name, s.named) for s in discover(paths).sources] == [
            ("a.md", False), ("schema.json", True)]


def test_folder_that_cannot_be_listed_is_named(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked" / "secret.md").write_text("# S\n\nsecret\n")
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert failed(tmp_path) == [Skipped("locked/", "cannot be read (Permission denied)")]
    with pytest.raises(CommandError, match="1 of 2 files cannot be ingested"):
        dry([tmp_path])


# --- nesting and size -----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "data"), [
    ("deep.json", b"[" * 100_000 + b"]" * 100_000),
    ("deep.html", b"<div>" * 5000 + b"text" + b"</div>" * 5000),
])
def test_deeply_nested_input_is_refused_with_its_reason(tmp_path: Path, name: str,
                                                       data: bytes) -> None:
    (tmp_path / name).write_bytes(data)
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    assert failed(tmp_path) == [Skipped(name, "nested too deeply to read")]


def test_many_small_units_at_the_largest_cap_are_packed_in_linear_time() -> None:
    # lines without spaces: the joined text was one long word, tokenized again at every line
    doc = markdown.parse("```\n" + "\n".join(str(n) for n in range(20_000)) + "\n```\n",
                         "big.md")
    started = time.monotonic()
    made = passages(doc, "big.md", counter(), 8000)
    took = time.monotonic() - started
    assert all(p.tokens <= 8000 and p.tokens == counter().full_count(p.text) for p in made)
    assert sum(p.tokens for p in made) > 7000 * (len(made) - 1)  # the passages are full
    assert took < 8, f"{took:.1f}s"  # it took over 20 s


UNITS = st.lists(st.lists(st.sampled_from(["a", "b", " ", "  ", "\n", "東", "\u2581", "-", "\r",
                                          "</s>", "<s>", "🙂"]), min_size=1, max_size=12)
                 .map("".join), min_size=1, max_size=8)


@given(UNITS, st.sampled_from([" ", "\n", "\n\n"]))
def test_a_growing_count_equals_the_tokenizers(units: list[str], separator: str) -> None:
    run = counter().running(units[0])
    for index in range(1, len(units)):
        grown = counter().grown(run, separator + units[index])
        run = grown or counter().running(separator.join(units[:index + 1]))
        assert run.tokens == counter().full_count(separator.join(units[:index + 1]))


def test_counts_after_the_word_cache_fills_up(monkeypatch: pytest.MonkeyPatch) -> None:
    fresh = TokenCounter(counter()._tokenizer)
    monkeypatch.setattr(tokens, "CACHED_WORDS", 4)
    texts = ["alpha beta", "alpha gamma delta epsilon", "alpha beta zeta"]
    assert fresh.counts(texts) == [counter().full_count(t) for t in texts]


# --- a record no part can hold --------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.postgres
def test_record_too_large_for_a_part_publishes_nothing(cli: Cli, tmp_path: Path) -> None:
    ns = ("-n", "ingest-edges-large")
    (tmp_path / "a.md").write_text("# A\n\nThe ledger keeps every transfer.\n")
    first = cli("ingest", str(tmp_path), "--context", "kb", "--create", "--json", *ns)
    assert first.code == 0, first.err
    (tmp_path / "big.md").write_text("# Big\n\n" + " ".join(
        f"word{n % 50} of the ledger" for n in range(1500)) + "\n")
    refused = cli("ingest", str(tmp_path), "--context", "kb", "--max-tokens", "4000",
                  "--part-size", "4096", *ns)
    assert refused.code == 1
    assert "big.md#big:1" in refused.err and "nothing was sent" in refused.err
    listed = cli("ctx", "revisions", "kb", "--json", *ns)
    assert [r["id"] for r in json.loads(listed.out)["items"]] == [
        json.loads(first.out)["revision"]]
    found = cli("query", "--id", "a.md#a:1", "--json", *ns)  # the index stays available
    assert found.code == 0, found.err
    assert [i["record"]["id"] for i in json.loads(found.out)["items"]] == ["a.md#a:1"]
    fresh = cli("ingest", str(tmp_path), "--context", "fresh", "--create", "--max-tokens",
                "4000", "--part-size", "4096", *ns)
    assert fresh.code == 1 and "nothing was sent" in fresh.err
    assert cli("ctx", "get", "fresh", *ns).code == 1  # not even created


def test_html_elements_marked_hidden_are_left_out() -> None:
    """``hidden`` and ``aria-hidden="true"`` hide an element and all it holds, in a block and
    inside one (a table cell, an inline element); ``aria-hidden="false"`` shows it."""
    page = ("<title>T</title><h1>Head</h1><p>shown</p><p hidden>secret one</p>"
            "<div aria-hidden='true'><p>secret two</p></div>"
            "<p>also <span aria-hidden=' TRUE '>secret three</span>shown</p>"
            "<table><tr><td>a</td><td hidden>secret four</td><td>b</td></tr></table>"
            "<section aria-hidden='false'><p>visible</p></section>")
    texts = [b.text for b in html.parse(page, "p.html").blocks]
    assert texts == ["shown", "also shown", "a | b", "visible"], texts


def test_a_pipe_or_a_device_is_refused_not_read(tmp_path: Path) -> None:
    """A named pipe (here named on the command line, where reading it would block for ever) and
    a link to a device (which would never end) are set aside with their reason, unread."""
    fifo = tmp_path / "notes.md"
    os.mkfifo(fifo)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "zero.txt").symlink_to("/dev/zero")
    (tmp_path / "docs" / "real.md").write_text("# Real\n\nSome text.\n")
    found = discover([str(fifo), str(tmp_path / "docs")])
    started = time.monotonic()
    result = read(found, counter(), 256)
    assert time.monotonic() - started < 10
    assert sorted((s.file, s.reason) for s in result.failed) == [
        ("docs/zero.txt", NOT_REGULAR), ("notes.md", NOT_REGULAR)], result.failed
    assert [e.name for e in result.entries] == ["docs/real.md"]


def test_utf16_with_its_byte_order_mark_is_read_as_text() -> None:
    """A UTF-16 file (little- or big-endian, with its byte order mark, as Windows tools write
    text) is read as the same text as its UTF-8 form; without text, with a lone surrogate, or
    UTF-32 behind the mark, it is refused with the reason."""
    text = "# Títle\r\n\r\nSome text — with ✓ and 𝄞.\r\n"
    want = [b.text for b in formats.parse(PurePath("a.md"), text.encode()).blocks]
    assert want
    for codec in ("utf-16-le", "utf-16-be"):
        data = ("\ufeff" + text).encode(codec)
        assert [b.text for b in formats.parse(PurePath("a.md"), data).blocks] == want
    for data, reason in ((b"\xff\xfe" + " \r\n".encode("utf-16-le"), "^empty file$"),
                         (b"\xff\xfe" + b"\x3d\xd8a\x00", "^invalid UTF-16 at byte 2$"),
                         ("\ufeffword".encode("utf-32-le"), "^binary content, not text$")):
        with pytest.raises(Unreadable, match=reason):
            formats.parse(PurePath("a.md"), data)


def test_a_thematic_break_first_is_not_front_matter() -> None:
    """Front matter is left out only when it reads as YAML (keys, list items, indented lines,
    comments); a file opening with a ``---`` rule and holding prose before a later one keeps
    that prose."""
    yaml = "---\ntitle: Guide\ntags:\n  - a\n- b\n# note\nempty:\n---\n# Head\n\nBody text.\n"
    assert [b.text for b in markdown.parse(yaml, "a.md").blocks] == ["Body text."]
    rule = "---\n\nIntro paragraph.\n\n---\n\nMore text.\n"
    assert [b.text for b in markdown.parse(rule, "a.md").blocks] == [
        "Intro paragraph.", "More text."]
