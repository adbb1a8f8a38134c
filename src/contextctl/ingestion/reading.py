"""Reading the discovered files into passages, on this machine only: each file is read, parsed
and split, or set aside with the reason it cannot be. No model and no network is involved."""

from __future__ import annotations

import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath, PurePosixPath

from context_service.contextctl.ingestion import formats
from context_service.contextctl.ingestion.blocks import Document
from context_service.contextctl.ingestion.decoding import NotADocument, Unreadable
from context_service.contextctl.ingestion.discovery import Found, Source
from context_service.contextctl.ingestion.meter import Done, FileMeter
from context_service.contextctl.ingestion.passages import Passage, passages
from context_service.contextctl.ingestion.revision import FileEntry, entry
from context_service.contextctl.ingestion.tokens import TokenCounter

_SURROGATE = re.compile("[\ud800-\udfff]")
NOT_REGULAR = "not a regular file (a pipe, a device or a socket)"


@dataclass(frozen=True, slots=True)
class Skipped:
    file: str
    reason: str


@dataclass(frozen=True, slots=True)
class Note:
    """Something a file was read with that its passages do not show (a chat export's parts
    that are not text): the file was ingested, and the report says it."""

    file: str
    note: str


@dataclass(slots=True)
class Read:
    entries: list[FileEntry] = field(default_factory=list)  # the files that gave passages
    passages: list[Passage] = field(default_factory=list)
    failed: list[Skipped] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)  # of the files that gave passages


def read(found: Found, counter: TokenCounter, max_tokens: int,
         advance: Callable[[int], None] = lambda _: None) -> Read:
    """Every file to passages, or set aside with its reason. ``advance`` moves the reading bar
    while a file is parsed and cut, by the size each file was found with (the bar's total)."""
    result = Read(ignored=list(found.ignored),
                  failed=[Skipped(name, reason) for name, reason in found.unreadable])
    for source in found.sources:
        meter = FileMeter(advance, source.size, formats.PARSE_SHARE[source.format])
        _read_one(source, counter, max_tokens, meter, result)
        meter.finish()  # the whole share of a file set aside, or whose work ended early
    result.ignored.sort(key=str.encode)
    return result


def _read_one(source: Source, counter: TokenCounter, max_tokens: int, meter: FileMeter,
              result: Read) -> None:
    try:
        # a pipe or a device (named, or linked to) would be read forever, or block
        regular = stat.S_ISREG(source.path.stat().st_mode)
        data = source.path.read_bytes() if regular else b""
    except OSError as exc:
        result.failed.append(Skipped(source.name, f"cannot be read ({exc.strerror or exc})"))
        return
    if not regular:
        result.failed.append(Skipped(source.name, NOT_REGULAR))
        return
    try:
        # the document's title is the name, composed (NFC)
        document = _parsed(PurePosixPath(source.name), data, meter.parsing)
        _check_unicode(document)
        made = passages(document, source.name, counter, max_tokens, meter.cutting)
        if not made:
            raise Unreadable("no text to index")
    except NotADocument as exc:
        if source.named:
            result.failed.append(Skipped(source.name, str(exc)))
        else:  # a folder's other JSON files (schemas, settings), an app's page (chat.html)
            result.ignored.append(source.name)
    except Unreadable as exc:
        result.failed.append(Skipped(source.name, str(exc)))
    else:
        result.entries.append(entry(source.name, data))
        result.passages.extend(made)
        result.notes.extend(Note(source.name, note) for note in document.notes)


def _parsed(path: PurePath, data: bytes, done: Done) -> Document:
    try:
        return formats.parse(path, data, done)
    except RecursionError as exc:  # JSON or HTML nested thousands deep
        raise Unreadable("nested too deeply to read") from exc


def _check_unicode(document: Document) -> None:
    """Text decoded from UTF-8 is Unicode, but a JSON string's escapes (``"\\ud83d"``, half an
    emoji) and a PDF's text layer can hold lone surrogates, which no tokenizer or UTF-8 body can
    carry."""
    for text in (document.title, *(part for block in document.blocks
                                   for part in (block.text, *block.heading))):
        found = _SURROGATE.search(text)
        if found:
            raise Unreadable(f"text holds a lone surrogate (U+{ord(found.group()):04X}), "
                             "not Unicode")
