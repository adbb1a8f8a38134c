"""Reading the discovered files into passages, on this machine only: each file is read, parsed
and split, or set aside with the reason it cannot be. No model and no network is involved."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from context_service.contextctl.ingestion import formats
from context_service.contextctl.ingestion.chat import NotTranscript
from context_service.contextctl.ingestion.decoding import Unreadable
from context_service.contextctl.ingestion.discovery import Found
from context_service.contextctl.ingestion.passages import Passage, passages
from context_service.contextctl.ingestion.revision import FileEntry, entry
from context_service.contextctl.ingestion.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class Skipped:
    file: str
    reason: str


@dataclass(slots=True)
class Read:
    entries: list[FileEntry] = field(default_factory=list)  # the files that gave passages
    passages: list[Passage] = field(default_factory=list)
    failed: list[Skipped] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def read(found: Found, counter: TokenCounter, max_tokens: int,
         advance: Callable[[int], None] = lambda _: None) -> Read:
    result = Read(ignored=list(found.ignored))
    for source in found.sources:
        try:
            data = source.path.read_bytes()
        except OSError as exc:
            result.failed.append(Skipped(source.name, f"cannot be read ({exc.strerror or exc})"))
            continue
        try:
            document = formats.parse(source.path, data)
            made = passages(document, source.name, counter, max_tokens)
            if not made:
                raise Unreadable("no text to index")
        except NotTranscript as exc:
            if source.named:
                result.failed.append(Skipped(source.name, str(exc)))
            else:  # a folder's other JSON files (schemas, settings) are not transcripts
                result.ignored.append(source.name)
        except Unreadable as exc:
            result.failed.append(Skipped(source.name, str(exc)))
        else:
            result.entries.append(entry(source.name, data))
            result.passages.extend(made)
        advance(len(data))
    result.ignored.sort(key=str.encode)
    return result
