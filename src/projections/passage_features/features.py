"""The texts an index publishes (agent-context-api 7.5, 7.6), and the port computing their
features: a record's text, its embedded text (``title + "\\n" + text``, or ``text``), and the
text of each document (its passages' texts joined with two line feeds)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import NamedTuple, Protocol

from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import document_id, document_text


class Feature(NamedTuple):
    tokens: int
    vector: bytes | None  # 256 float32, big-endian; None: not embedded, or no tokens


class Text(NamedTuple):
    """A published text as ``separator.join(parts)``: a record's text (one part), its embedded
    text (title and text, joined by a line feed) or a document (its passages' texts, joined by
    two). The parts let the model reuse the work of one text for the texts it is part of."""

    parts: tuple[str, ...]
    separator: str = ""
    embed: bool = False  # whether a vector is wanted, besides the token count

    @property
    def text(self) -> str:
        return self.separator.join(self.parts)


class TextFeatures(Protocol):
    """Computes features (the embedding adapter implements it; pure functions of the text)."""

    def features(self, texts: Sequence[Text]) -> list[Feature]:
        """Token count of each text and, where ``embed``, its unit vector."""


def text_hash(text: str) -> bytes:
    """SHA-256 of the text's UTF-8 bytes: the key of its features."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def embedded_text(record: QueryRecord) -> str:
    return f"{record.title}\n{record.text}" if record.title else record.text


def first_per_id(records: Sequence[QueryRecord]) -> list[tuple[int, QueryRecord]]:
    """(ord, record) of the first record per id, in publish order (spec 5.1)."""
    seen: set[str] = set()
    out = []
    for ord_, record in enumerate(records):
        if record.id not in seen:
            seen.add(record.id)
            out.append((ord_, record))
    return out


def documents(collection: str, passages: Sequence[tuple[int, QueryRecord]],
              ) -> dict[str, tuple[list[QueryRecord], str]]:
    """Each document of an index: its passages in publish order and its text (spec 5.2)."""
    grouped: dict[str, list[QueryRecord]] = {}
    for _, record in passages:
        grouped.setdefault(document_id(collection, record), []).append(record)
    return {doc: (members, document_text([r.text for r in members]))
            for doc, members in grouped.items()}


def embedded_parts(record: QueryRecord) -> Text:
    if record.title:
        return Text((record.title, record.text), "\n", embed=True)
    return Text((record.text,), embed=True)


class PublishedTexts:
    """The distinct texts of indexes, by hash: which need a vector and which only a count."""

    def __init__(self) -> None:
        self.embedded: dict[bytes, Text] = {}
        self.counted: dict[bytes, Text] = {}

    def add_index(self, collection: str, records: Sequence[QueryRecord]) -> None:
        passages = first_per_id(records)
        for record in records:
            self.counted.setdefault(text_hash(record.text), Text((record.text,)))
            embedded = embedded_parts(record)
            self.embedded.setdefault(text_hash(embedded.text), embedded)
        for members, text in documents(collection, passages).values():
            self.counted.setdefault(text_hash(text),
                                    Text(tuple(r.text for r in members), "\n\n"))

    @property
    def hashes(self) -> set[bytes]:
        return set(self.embedded) | set(self.counted)
