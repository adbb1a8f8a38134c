"""PDF (the text layer, read by ``pypdf``): each page is a section (anchor ``p<n>``) whose
paragraphs are blocks; the heading path comes from the document's outline (bookmarks) when it
has one. A PDF whose pages hold no text (a scan) is refused: there is no text layer to index."""

from __future__ import annotations

import io
import logging
import re
import warnings
from typing import Any

from pypdf import PdfReader

from context_service.contextctl.ingestion.blocks import Block, Document
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.meter import Done, unreported

_BLANK_LINES = re.compile(r"\n[ \t]*\n")
_HYPHENATED = re.compile(r"(\w)-\n(\w)")


def parse(data: bytes, name: str, done: Done = unreported) -> Document:
    if not data.strip():
        raise Unreadable("empty file")
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # damaged files are refused, not logged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise Unreadable("encrypted PDF")
            pages = _texts(reader, done)
            headings = _outline(reader)
            title = str(reader.metadata.title or "").strip() if reader.metadata else ""
        except Unreadable:
            raise
        except Exception as exc:  # pypdf raises many kinds of error for damaged files
            raise Unreadable(f"not a readable PDF ({exc.__class__.__name__}: {exc})") from exc
    document = Document(title or name)
    path: tuple[str, ...] = ()
    for number, text in enumerate(pages, 1):
        path = headings.get(number - 1, path)
        for paragraph in _paragraphs(text):
            document.blocks.append(Block(path, f"p{number}", paragraph))
    if not document.blocks:
        raise Unreadable("PDF without a text layer (scanned pages?)")
    return document


def _texts(reader: PdfReader, done: Done) -> list[str]:
    """Each page's text layer; ``done`` hears of each page read (most of a parse's time)."""
    texts: list[str] = []
    count = len(reader.pages)
    for number, page in enumerate(reader.pages, 1):
        texts.append(page.extract_text() or "")
        done(number, count)
    return texts


def _paragraphs(text: str) -> list[str]:
    """Blank lines part paragraphs; inside one, lines are joined (hyphenation undone)."""
    joined = _HYPHENATED.sub(r"\1\2", text.replace("\r\n", "\n"))
    found = (" ".join(p.split()) for p in _BLANK_LINES.split(joined))
    return [p for p in found if p]


def _outline(reader: PdfReader) -> dict[int, tuple[str, ...]]:
    """The heading path in force from each page that starts an outline entry (0-based)."""
    found: dict[int, tuple[str, ...]] = {}

    def visit(entries: list[Any], parents: tuple[str, ...]) -> None:
        last: tuple[str, ...] = parents
        for entry in entries:
            if isinstance(entry, list):
                visit(entry, last)
                continue
            last = (*parents, " ".join(str(entry.title or "").split()))
            page = reader.get_destination_page_number(entry)
            if page is not None and page >= 0:
                found.setdefault(page, last)

    try:
        visit(list(reader.outline), ())
    except Exception:  # an outline that cannot be read leaves the pages without headings
        return {}
    return found
