"""Ingestion gives the same records and revision on every machine: file names in the Unicode
form macOS writes (NFD) are named as Linux and Windows write them (NFC), two files whose names
differ only in that form are set aside rather than published twice under one name, and a
sentence too long for one passage is cut between words wherever it has any. A large Markdown
file is parsed a slice at a time, in bounded memory, into the blocks of one parse. An index
needing more parts than an upload may have is refused before anything is sent."""

from __future__ import annotations

import tracemalloc
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.contextctl.client import CommandError
from context_service.contextctl.ingestion import ingest, markdown
from context_service.contextctl.ingestion import service as ingest_service
from context_service.contextctl.ingestion.blocks import Block, Document
from context_service.contextctl.ingestion.discovery import discover
from context_service.contextctl.ingestion.passages import passages
from context_service.contextctl.ingestion.reading import read
from context_service.contextctl.ingestion.tokens import counter

CAFE = "caf\u00e9"  # NFC: é is one code point; NFD writes e and a combining acute accent


def nfd(name: str) -> str:
    return unicodedata.normalize("NFD", name)


def folder(root: Path, form: str) -> Path:
    (root / unicodedata.normalize(form, "\u00e9t\u00e9")).mkdir(parents=True)
    (root / unicodedata.normalize(form, f"\u00e9t\u00e9/{CAFE}.md")).write_text(
        "# Menu\n\nThe ledger keeps every transfer.\n")
    (root / unicodedata.normalize(form, f"{CAFE}.txt")).write_text("Espresso and tea.\n")
    return root


def test_names_written_in_nfd_give_the_records_and_revision_of_nfc_names(tmp_path: Path) -> None:
    linux = ingest([folder(tmp_path / "nfc", "NFC")], context="kb", dry_run=True)
    mac = ingest([folder(tmp_path / "nfd", "NFD")], context="kb", dry_run=True)
    assert [r["file"] for r in linux.records] == [f"{CAFE}.txt", f"\u00e9t\u00e9/{CAFE}.md"]
    assert mac.records == linux.records  # ids, titles and files too
    assert mac.revision == linux.revision


def test_two_names_differing_only_in_unicode_form_are_both_set_aside(tmp_path: Path) -> None:
    (tmp_path / f"{CAFE}.md").write_text("# One\n\nFirst.\n")
    (tmp_path / nfd(f"{CAFE}.md")).write_text("# Two\n\nSecond.\n")
    (tmp_path / "other.md").write_text("# Other\n\nThird.\n")
    got = read(discover([tmp_path]), counter(), 256)
    assert [p.file for p in got.passages] == ["other.md"]
    assert [(s.file, s.reason) for s in got.failed] == [
        (f"{CAFE}.md", "2 files have this name, written in different Unicode forms (NFC and "
                       "NFD): rename one")]


def test_a_sentence_too_long_for_a_passage_is_cut_between_words() -> None:
    words = [f"ledgerkeeping{n} transferability" for n in range(200)]
    text = " ".join(words)
    made = passages(Document("a.md", [Block(("A",), "a", text)]), "a.md", counter(), 32)
    assert len(made) > 1
    allowed = set(text.split())
    for passage in made:
        assert passage.tokens <= 32
        assert set(passage.text.split()) <= allowed, passage.text
    assert " ".join(p.text for p in made) == text


def test_a_word_longer_than_a_passage_is_still_cut_and_kept_whole() -> None:
    blob = "QmFzZTY0" * 120  # one word of some 300 tokens
    made = passages(Document("a.md", [Block(("A",), "a", f"key {blob} end")]), "a.md",
                    counter(), 32)
    assert all(p.tokens <= 32 for p in made)
    assert "".join(p.text for p in made).replace(" ", "") == f"key{blob}end"


# --- a large Markdown file is parsed a slice at a time ------------------------------------------

SNIPPETS = ["# Guide", "## Install", "### Linux", "Some prose with a [link][ref].",
            "- item one\n- item two", "1. first\n\n   more of first", "  ```\n  code in a list",
            "```python\nprint(1)\n```", "```\nnever closed", "<!-- a comment\n\n# not a heading",
            "-->", "<div>\n\n# heading after html</div>", "> quoted\n# lazy?", "    indented code",
            "| a | b |\n|---|---|\n| 1 | 2 |", "[ref]: https://example.com", "Setext\n===", "",
            "- a\n  ```\n  open fence in an item", "<script>\n\n# in a script", "</script>",
            "~~~\nopen tilde fence", "~~~", "```", " # indented heading", "lazy\n# line"]


@given(st.lists(st.sampled_from(SNIPPETS), max_size=40))
def test_markdown_parsed_in_slices_gives_the_blocks_of_one_parse(parts: list[str]) -> None:
    text = "\n\n".join(parts) + "\n"
    whole = markdown.parse(text, "a.md")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(markdown, "SLICE", 1)  # cut at every heading where a cut is sound
        sliced = markdown.parse(text, "a.md")
    assert sliced == whole


CHAPTERS = 2_000  # of some 100 bytes each


def test_a_large_markdown_file_is_parsed_in_bounded_memory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # slices of 8 KiB over 0.2 MB stand for the service's 256 KiB over megabytes (tracing
    # every allocation makes the real sizes cost the suite half a minute): the peak's share of
    # the file depends on how many slices it takes, not on their size (as traced, 19 times the
    # file in 26 slices of 8 KiB or of 32 KiB, and 93 times in one parse of either file)
    monkeypatch.setattr(markdown, "SLICE", 1 << 13)
    text = "".join(f"## Chapter {n}\n\nThe ledger entry {n} records a transfer.\n\n"
                   f"- item one {n}\n- item two\n\n```\ncode {n}\n```\n\n" for n in range(CHAPTERS))
    tracemalloc.start()
    try:
        document = markdown.parse(text, "big.md")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(document.blocks) == 4 * CHAPTERS
    # one parse of the whole file took some 90 times its size (as traced); a slice at a time
    # it takes the document's blocks (8 times) and one slice's tokens
    assert peak < 25 * len(text), (peak, len(text))


# --- an index needing more parts than an upload may have -----------------------------------------


def test_an_index_needing_more_parts_than_an_upload_has_is_refused_before_sending() -> None:
    """The service takes at most 10,000 parts per upload and refuses part 1 of a larger one, by
    then after the revision was published: the command refuses it before writing anything."""
    records = [{"id": f"a.md#{n}", "context": "kb", "type": "knowledge", "revision": "r",
                "text": "x" * 3000} for n in range(10_001)]  # one record a part of 4 KiB
    with pytest.raises(CommandError) as refused:
        ingest_service.index_sender("team", "kb", "r", records, 4096)
    assert str(refused.value) == (
        "the index needs 10,001 parts of at most 4,096 bytes and an upload has at most 10,000: "
        "pass a larger --part-size; nothing was sent")
    assert ingest_service.index_sender("team", "kb", "r", records[:10_000], 4096).total() > 0
