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
    # an embedded text's distinct model pieces with their counts (the embedding adapter's
    # ``piece_counts``), what pack-engine/2 pools; None: not embedded, or not stored
    pieces: bytes | None = None


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


class IndexTexts(NamedTuple):
    """One index's texts as its views lay them out: the first record per id, the documents,
    and the hash of each record's text, embedded text and document text."""

    records: tuple[QueryRecord, ...]
    passages: list[tuple[int, QueryRecord]]
    documents: dict[str, tuple[list[QueryRecord], str]]
    own: list[bytes]  # per record: hash of its text
    embedded: list[bytes]  # per record: hash of its embedded text
    document_hashes: dict[str, bytes]
    texts: PublishedTexts  # this index's texts alone


class PublishedTexts:
    """The distinct texts of indexes, by hash: which need a vector and which only a count."""

    def __init__(self) -> None:
        self.embedded: dict[bytes, Text] = {}
        self.counted: dict[bytes, Text] = {}

    def add_index(self, collection: str, records: Sequence[QueryRecord]) -> IndexTexts:
        """Add an index's texts; its layout and texts alone are returned."""
        mine = PublishedTexts()
        passages = first_per_id(records)
        own, embedded_hashes = [], []
        for record in records:
            key = text_hash(record.text)
            own.append(key)
            mine.counted.setdefault(key, Text((record.text,)))
            embedded = embedded_parts(record)
            key = text_hash(embedded.text) if record.title else key
            embedded_hashes.append(key)
            mine.embedded.setdefault(key, embedded)
        docs = documents(collection, passages)
        document_hashes = {}
        for doc, (members, text) in docs.items():
            key = document_hashes[doc] = text_hash(text)
            mine.counted.setdefault(key, Text(tuple(r.text for r in members), "\n\n"))
        if self.embedded or self.counted:
            for key, known in mine.embedded.items():
                self.embedded.setdefault(key, known)
            for key, known in mine.counted.items():
                self.counted.setdefault(key, known)
        else:
            self.embedded, self.counted = dict(mine.embedded), dict(mine.counted)
        return IndexTexts(tuple(records), passages, docs, own, embedded_hashes,
                          document_hashes, mine)

    @property
    def hashes(self) -> set[bytes]:
        return set(self.embedded) | set(self.counted)


class Handover:
    """What ``passage_features`` computed for the publications of the batch it applied last,
    by log position, for ``agent_data`` applied after it in the same transaction: each
    index's texts and the features of the batch's new texts (pure functions of the text, so
    valid whatever becomes of the transaction). Each entry is taken once."""

    def __init__(self) -> None:
        self._indexes: dict[int, IndexTexts] = {}
        self.features: dict[bytes, Feature] = {}

    def reset(self) -> None:
        self._indexes = {}
        self.features = {}

    def put(self, position: int, texts: IndexTexts) -> None:
        self._indexes[position] = texts

    def take(self, position: int) -> IndexTexts | None:
        return self._indexes.pop(position, None)
