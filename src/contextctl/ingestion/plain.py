"""Plain text: paragraphs are separated by blank lines; there are no headings, so every passage
takes the document's title (its file name)."""

from __future__ import annotations

import re

from context_service.contextctl.ingestion.blocks import Document, Outline
from context_service.contextctl.ingestion.meter import Done, unreported

_BLANK_LINES = re.compile(r"\n[ \t]*\n")
_NEWLINES = re.compile(r"\r\n?")  # Windows and old Mac line ends


def parse(text: str, name: str, done: Done = unreported) -> Document:
    """One split by a regular expression: there is nothing to tell ``done`` before it ends."""
    outline = Outline()
    paragraphs = (p.strip() for p in _BLANK_LINES.split(_NEWLINES.sub("\n", text)))
    return Document(name, [outline.block(p) for p in paragraphs if p])
