"""Bytes to text, refusing what is not text: an empty file, binary content (NUL bytes) and
invalid UTF-8 are each named with their reason. A UTF-8 byte order mark is dropped."""

from __future__ import annotations

import codecs


class Unreadable(Exception):
    """A file that cannot be ingested; ``str()`` is the reason shown next to its name."""


def text_of(data: bytes) -> str:
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    data = data[bom:]  # before the check for emptiness: a BOM alone is no text
    if not data.strip():
        raise Unreadable("empty file")
    if b"\x00" in data:
        raise Unreadable("binary content, not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Unreadable(f"invalid UTF-8 at byte {bom + exc.start}") from exc  # of the file
