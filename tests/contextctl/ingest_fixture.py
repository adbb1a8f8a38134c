"""A folder of every format ``contextctl ingest`` reads, in nested folders, with every kind of
bad input next to it, made fresh by each test: Markdown, text, HTML, a PDF with a text layer and
an outline, chat transcripts (role/content lines, a ``messages`` object, the LoCoMo shape), and
an empty file, binary junk, invalid UTF-8, a PDF without text, a damaged PDF, a dangling link."""

from __future__ import annotations

import io
import json
from pathlib import Path

from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

GUIDE = """---
title: front matter is left out
---
Read this guide before the first deployment.

# Guide

The guide covers installation and upgrades of the orchard service.

## Install

### Linux

Install the orchard package with apt, then enable the orchard unit with systemctl.

- the package needs 2 GiB of disk
- the unit listens on port 7400

```sh
apt-get install orchard
```

### macOS

Use Homebrew: brew install orchard.

## Upgrade

Stop the unit, install the new package, start the unit again.
"""
NOTES = """Backup window

Backups of the ledger run every Sunday at 02:00 UTC and keep 35 days.

Restores are tested on the first Monday of each month."""
PAGE = """<!doctype html><html><head><title>Runbook</title><style>p{color:red}</style>
<script>alert("never indexed")</script></head><body><nav>Home | Runbooks</nav>
<h1>Incident runbook</h1><p>Page the on-call engineer through the pager rotation.</p>
<h2>Failover</h2><ol><li>Promote the replica in the second region.</li>
<li>Move the DNS record to the promoted replica.</li></ol>
<table><tr><th>Region</th><th>Replica</th></tr><tr><td>west</td><td>db-west-2</td></tr></table>
</body></html>"""
PDF_PAGES = [["Quarterly report", "Revenue from the orchard subscriptions grew by 14 percent."],
             ["Hiring", "The platform team hired three site reliability engineers."]]
SUPPORT = [{"role": "user", "content": "My invoice shows the wrong tenant.",
            "time": "2026-03-02T09:15:00Z"},
           {"role": "assistant", "content": "I moved invoice 4411 to tenant blue.",
            "time": "2026-03-02T09:16:30+01:00"}]
LOCOMO = [{"sample_id": "conv-1", "qa": [], "conversation": {
    "speaker_a": "Ana", "speaker_b": "Ben",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [{"speaker": "Ana", "dia_id": "D1:1",
                   "text": "I adopted a greyhound named Comet."},
                  {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! Send a picture.",
                   "blip_caption": "a grey dog on a sofa"}],
    "session_2_date_time": "10:05 am on 20 June, 2023",
    "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "How is Comet doing?"}]}}]
BAD_REASONS = {
    "bad/empty.md": "empty file",
    "bad/junk.txt": "binary content, not text",
    "bad/latin1.md": "invalid UTF-8 at byte 5",
    "bad/scan.pdf": "PDF without a text layer (scanned pages?)",
    "bad/damaged.pdf": "not a readable PDF",
    "bad/gone.md": "cannot be read (No such file or directory)",
}


def pdf_bytes(pages: list[list[str]], outline: list[str] | None = None) -> bytes:
    """A PDF whose pages draw the given lines in Helvetica (a real text layer)."""
    writer = PdfWriter()
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        font = writer._add_object(DictionaryObject({
            NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica")}))
        page[NameObject("/Resources")] = DictionaryObject({
            NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})})
        shown = [f"({_escaped(line)}) Tj T*" for line in lines]
        stream = DecodedStreamObject()
        stream.set_data("\n".join(["BT", "/F1 12 Tf", "14 TL", "72 720 Td", *shown, "ET"])
                        .encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
    for number, title in enumerate(outline or []):
        writer.add_outline_item(title=title, page_number=number)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def good_folder(root: Path) -> Path:
    """Every format, nested, plus files ingest leaves out (other formats, hidden, a schema)."""
    (root / "nested" / "deeper").mkdir(parents=True)
    (root / "chats").mkdir()
    (root / "guide.md").write_text(GUIDE)
    (root / "nested" / "deeper" / "notes.txt").write_text(NOTES)
    (root / "nested" / "page.html").write_text(PAGE)
    (root / "nested" / "report.pdf").write_bytes(pdf_bytes(PDF_PAGES, ["Summary", "People"]))
    (root / "chats" / "support.jsonl").write_text(
        "\n".join(json.dumps(m) for m in SUPPORT) + "\n")
    (root / "chats" / "thread.json").write_text(json.dumps({"messages": [
        {"speaker": "ops", "text": "Canary deploy of orchard 2.4 is at 10 percent."}]}))
    (root / "chats" / "locomo.json").write_text(json.dumps(LOCOMO))
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (root / "schema.json").write_text(json.dumps({"type": "object", "properties": {}}))
    (root / ".hidden.md").write_text("# Hidden\n\nNever read.")
    return root


def bad_folder(root: Path) -> Path:
    """``good_folder`` with every kind of bad input under ``bad/``."""
    good_folder(root)
    bad = root / "bad"
    bad.mkdir()
    (bad / "empty.md").write_bytes(b"")
    (bad / "junk.txt").write_bytes(bytes(range(256)) * 4)
    (bad / "latin1.md").write_bytes("# Caf\u00e9\n\nna\u00efve".encode("latin-1"))
    (bad / "scan.pdf").write_bytes(pdf_bytes([[]]))
    (bad / "damaged.pdf").write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    (bad / "gone.md").symlink_to(bad / "missing-target.md")
    return root
