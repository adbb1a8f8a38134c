"""Parsing the formats ``contextctl ingest`` reads (pure): Markdown heading paths and blocks,
HTML's visible text, PDF pages and outline, chat transcripts and their times, and the reason
each kind of bad input is refused with."""

from __future__ import annotations

import json
from pathlib import PurePath

import pytest

from context_service.contextctl.ingestion import chat, formats, html, markdown, pdf, plain
from context_service.contextctl.ingestion.blocks import LINES
from context_service.contextctl.ingestion.chat import NotTranscript
from context_service.contextctl.ingestion.decoding import Unreadable
from tests.contextctl.ingest_fixture import GUIDE, LOCOMO, PAGE, pdf_bytes


def test_markdown_blocks_under_their_heading_path() -> None:
    doc = markdown.parse(GUIDE, "guide.md")
    got = [(b.heading, b.anchor, b.text.split("\n")[0], b.cut) for b in doc.blocks]
    assert got == [
        ((), "", "Read this guide before the first deployment.", "prose"),
        (("Guide",), "guide", "The guide covers installation and upgrades of the orchard "
         "service.", "prose"),
        (("Guide", "Install", "Linux"), "linux", "Install the orchard package with apt, then "
         "enable the orchard unit with systemctl.", "prose"),
        (("Guide", "Install", "Linux"), "linux", "- the package needs 2 GiB of disk", "prose"),
        (("Guide", "Install", "Linux"), "linux", "- the unit listens on port 7400", "prose"),
        (("Guide", "Install", "Linux"), "linux", "```sh", LINES),
        (("Guide", "Install", "macOS"), "macos", "Use Homebrew: brew install orchard.", "prose"),
        (("Guide", "Upgrade"), "upgrade", "Stop the unit, install the new package, start the "
         "unit again.", "prose")]


def test_markdown_heading_text_without_markup() -> None:
    doc = markdown.parse("# Use `ctl` *now*\n\ntext\n", "a.md")
    assert doc.blocks[0].heading == ("Use ctl now",) and doc.blocks[0].anchor == "use-ctl-now"


def test_html_visible_text_only() -> None:
    doc = html.parse(PAGE, "page.html")
    assert doc.title == "Runbook"
    assert [(b.heading, b.text) for b in doc.blocks] == [
        (("Incident runbook",), "Page the on-call engineer through the pager rotation."),
        (("Incident runbook", "Failover"), "Promote the replica in the second region."),
        (("Incident runbook", "Failover"), "Move the DNS record to the promoted replica."),
        (("Incident runbook", "Failover"), "Region | Replica"),
        (("Incident runbook", "Failover"), "west | db-west-2")]


def test_pdf_pages_and_outline() -> None:
    doc = pdf.parse(pdf_bytes([["Alpha line one", "line two"], ["Beta"]], ["Intro", "Next"]),
                    "r.pdf")
    assert [(b.heading, b.anchor, b.text) for b in doc.blocks] == [
        (("Intro",), "p1", "Alpha line one line two"), (("Next",), "p2", "Beta")]
    assert pdf.parse(pdf_bytes([["x"]]), "r.pdf").blocks[0].heading == ()


@pytest.mark.parametrize(("name", "data", "reason"), [
    ("a.md", b"", "empty file"),
    ("a.md", b"  \n\t\n", "empty file"),
    ("a.txt", b"text\x00more", "binary content, not text"),
    ("a.html", b"ok \xff\xfe", "invalid UTF-8 at byte 3"),
    ("a.pdf", pdf_bytes([[]]), "PDF without a text layer (scanned pages?)"),
    ("a.pdf", b"%PDF-1.4 junk", "not a readable PDF"),
    ("a.json", b"{nope", "not JSON"),
    ("a.jsonl", b'{"role":"u","content":"x"}\n[', "line 2 is not JSON"),
    ("a.json", b'[{"role":"u","content":"x","time":"yesterday"}]',
     "message 1: time 'yesterday' is not a date and time"),
])
def test_bad_input_is_refused_with_its_reason(name: str, data: bytes, reason: str) -> None:
    with pytest.raises(Unreadable) as refused:
        formats.parse(PurePath(name), data)
    assert str(refused.value).startswith(reason)


def test_json_that_is_not_a_transcript() -> None:
    with pytest.raises(NotTranscript):
        chat.parse_json(json.dumps({"type": "object"}), "schema.json")


def test_chat_messages_and_times() -> None:
    doc = chat.parse_json(json.dumps([
        {"role": "user", "content": " hi ", "time": "2026-03-02T09:16:30+01:00"},
        {"speaker": "bot", "text": "hello", "timestamp": 0},
        {"role": "user", "content": "naive", "time": "2026-03-02 10:00:00"}]), "c.json")
    assert [(b.anchor, b.text, b.valid_from) for b in doc.blocks] == [
        ("m1", "user: hi", "2026-03-02T08:16:30Z"), ("m2", "bot: hello", "1970-01-01T00:00:00Z"),
        ("m3", "user: naive", "2026-03-02T10:00:00Z")]


def test_locomo_shape() -> None:
    doc = chat.parse_json(json.dumps(LOCOMO), "locomo.json")
    assert [(b.heading, b.anchor, b.valid_from) for b in doc.blocks] == [
        (("conv-1", "Session 1 (1:56 pm on 8 May, 2023)"), "conv-1/d1-1", "2023-05-08T13:56:00Z"),
        (("conv-1", "Session 1 (1:56 pm on 8 May, 2023)"), "conv-1/d1-2", "2023-05-08T13:56:00Z"),
        (("conv-1", "Session 2 (10:05 am on 20 June, 2023)"), "conv-1/d2-1",
         "2023-06-20T10:05:00Z")]


def test_plain_text_paragraphs() -> None:
    doc = plain.parse("one\nstill one\n\n\n two \r\n\r\nthree", "n.txt")
    assert [b.text for b in doc.blocks] == ["one\nstill one", "two", "three"]
    assert doc.title == "n.txt"
