"""Bytes to text, refusing what is not text: an empty file, binary content (NUL bytes) and
invalid UTF-8 are each named with their reason. A UTF-8 byte order mark is dropped; a UTF-16 one
(little- or big-endian, as Windows tools write text) says how the rest is encoded."""

from __future__ import annotations

import codecs
import re

# lines end at \n, \r\n or \r only: U+2028 and U+0085 may stand in a JSON string
LINE_ENDS = re.compile(r"\r\n?|\n")
_UTF16 = ((codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


class Unreadable(Exception):
    """A file that cannot be ingested; ``str()`` is the reason shown next to its name."""


class NotADocument(Unreadable):
    """A file of a supported suffix that is not a document (a JSON schema, a page its scripts
    draw): a folder's such files are left out and listed as ignored; named, it is an error."""


def text_of(data: bytes) -> str:
    for mark, codec in _UTF16:
        if data.startswith(mark):
            return _utf16(data[len(mark):], codec, len(mark))
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


def _utf16(data: bytes, codec: str, bom: int) -> str:
    """The text after a UTF-16 byte order mark (a lone surrogate or an odd byte is invalid)."""
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        raise Unreadable(f"invalid UTF-16 at byte {bom + exc.start}") from exc
    if not text.strip():
        raise Unreadable("empty file")
    if "\x00" in text:  # UTF-32, or binary content behind the mark
        raise Unreadable("binary content, not text")
    return text


def with_newlines(text: str) -> str:
    """The text with its lines ending at ``\\n`` as in every format: a message typed on
    Windows (``\\r\\n``) is the passage of one typed elsewhere."""
    return LINE_ENDS.sub("\n", text)
