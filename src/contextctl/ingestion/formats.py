"""Which parser reads a file, chosen by its suffix: Markdown, plain text, HTML, PDF, and chat
transcripts in JSON or JSON Lines. A parser's module (and its library) is imported when a file
of its format is first read, so other commands start without them."""

from __future__ import annotations

import importlib
from pathlib import PurePath

from context_service.contextctl.ingestion.blocks import Document
from context_service.contextctl.ingestion.decoding import text_of

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


def format_of(path: PurePath) -> str | None:
    """``markdown``, ``text``, ``html``, ``pdf``, ``chat``, or ``None`` when not supported."""
    found = PARSERS.get(path.suffix.lower())
    return found[0] if found else None


def parse(path: PurePath, data: bytes) -> Document:
    """The file's document; raises ``Unreadable`` with the reason it cannot be read."""
    _, module, function, textual = PARSERS[path.suffix.lower()]
    parser = getattr(importlib.import_module(f"{PACKAGE}.{module}"), function)
    document: Document = parser(text_of(data) if textual else data, path.name)
    return document
