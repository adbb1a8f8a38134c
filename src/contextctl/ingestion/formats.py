"""Which parser reads a file, chosen by its suffix: Markdown, plain text, HTML, PDF, and chat
transcripts in JSON or JSON Lines. A parser's module (and its library) is imported when a file
of its format is first read, so other commands start without them."""

from __future__ import annotations

import importlib
from pathlib import PurePath

from context_service.contextctl.ingestion.blocks import Document
from context_service.contextctl.ingestion.decoding import text_of
from context_service.contextctl.ingestion.meter import Done, unreported

PACKAGE = "context_service.contextctl.ingestion"
# suffix: (format, module, function, whether the function takes decoded text)
PARSERS: dict[str, tuple[str, str, str, bool]] = {
    ".md": ("markdown", "markdown", "parse", True),
    ".markdown": ("markdown", "markdown", "parse", True),
    ".txt": ("text", "plain", "parse", True),
    ".text": ("text", "plain", "parse", True),
    ".html": ("html", "html", "parse", True),
    ".htm": ("html", "html", "parse", True),
    ".pdf": ("pdf", "pdf", "parse", False),
    ".json": ("chat", "chat", "parse_json", True),
    ".jsonl": ("chat", "chat", "parse_jsonl", True),
}
SUFFIXES = tuple(PARSERS)
# the part of a file's reading time its parse takes, as measured on files of a few megabytes
# (the rest is cutting its blocks into passages): the reading bar moves by these shares
PARSE_SHARE = {"markdown": 0.6, "text": 0.05, "html": 0.4, "pdf": 0.8, "chat": 0.35}


def format_of(path: PurePath) -> str | None:
    """``markdown``, ``text``, ``html``, ``pdf``, ``chat``, or ``None`` when not supported."""
    found = PARSERS.get(path.suffix.lower())
    return found[0] if found else None


def parse(path: PurePath, data: bytes, done: Done = unreported) -> Document:
    """The file's document; raises ``Unreadable`` with the reason it cannot be read. The parser
    tells ``done`` how far it has come (by slice, page, message...)."""
    _, module, function, textual = PARSERS[path.suffix.lower()]
    parser = getattr(importlib.import_module(f"{PACKAGE}.{module}"), function)
    document: Document = parser(text_of(data) if textual else data, path.name, done)
    return document
