"""The shared vocabulary of packs: what the namespace looked like at a position, the corpus of
usable indexes, scored candidates, and the ports the engine is given (retrieval, token counts).

The adapters fill these in (the pack-input fold, the features of published texts, the vector
scan); the engine (``engine.py``) only reads them.
"""

from __future__ import annotations

import weakref
from array import array
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple, Protocol

import msgspec

from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack.text import (
    Signature,
    TokenTable,
    release_tokens,
    signature,
    token_table,
)

ENGINE_VERSION = "pack-engine/2"
SOURCES = ("passages", "graph", "documents")

TokenCount = Callable[[str], int]
"""The token count of a text under the embedding model's tokenizer (§7.6)."""


# --- the namespace at a position (§7.3) -------------------------------------------------------


class CollectionAt(msgspec.Struct, frozen=True, kw_only=True):
    """One context of the namespace folded to position P."""

    name: str
    live: bool
    type: str  # memory | knowledge | ...
    current_revision: str  # "" when none
    index_revision: str  # "" when no index was published
    publication: int  # log position of the QueryIndexPublished that made the index current; 0
    sources: tuple[SourceRef, ...] = ()  # provenance of the current revision (derived_from)

    @property
    def usable(self) -> bool:
        """Its index at P exists and was published for its current revision at P."""
        return self.publication > 0 and self.index_revision == self.current_revision


class NamespaceAt(msgspec.Struct, frozen=True, kw_only=True):
    """The pack inputs of one namespace folded to ``position`` (every event with position ≤ P)."""

    namespace: str
    position: int
    system_time: datetime
    collections: Mapping[str, CollectionAt]
    sets: Mapping[str, ContextSetState]  # by set id, each folded to P (absent: not created by P)


# --- the corpus (§5.1, §5.2, §7.4) ------------------------------------------------------------


class Passage(msgspec.Struct, frozen=True, kw_only=True):
    """A record of a usable index as packs read it: the first record per id (§5.1)."""

    collection: str
    revision: str  # the collection's index revision at P
    ord: int  # position in the index's records array (publish order)
    record: QueryRecord
    tokens: int  # token count of ``record.text``
    ref: str  # the record reference ``<collection>/<recordId>`` (read by every step of a pack)


class Document(msgspec.Struct, frozen=True, kw_only=True):
    """A document (§5.2): its passages in publish order and its text's token count."""

    document_id: str
    collection: str
    record_ids: tuple[str, ...]
    text: str
    tokens: int


def document_id(collection: str, record: QueryRecord) -> str:
    """``<collection>/<file>`` or ``<collection>/#<recordId>`` (§5.2, escaped so never equal)."""
    if record.file:
        file = record.file.replace("%", "%25")
        if file.startswith("#"):
            file = "%23" + file[1:]
        return f"{collection}/{file}"
    return f"{collection}/#{record.id}"


def document_text(texts: Sequence[str]) -> str:
    return "\n\n".join(texts)


class CollectionCorpus:
    """One usable index, with the lookups packing needs precomputed once per publication.

    Immutable once built, so adapters may cache it by ``publication`` (a log position); the
    deduplication signatures of its passages are memoised as packs first need them (``warm``
    computes them all, for a loader that prefers paying once at load)."""

    def __init__(self, collection: str, revision: str, publication: int,
                 records: Sequence[QueryRecord], tokens: TokenCount) -> None:
        self.collection = collection
        self.revision = revision
        self.publication = publication
        first: dict[str, Passage] = {}
        for ord_, record in enumerate(records):
            if record.id not in first:
                first[record.id] = Passage(collection=collection, revision=revision, ord=ord_,
                                           record=record, tokens=tokens(record.text),
                                           ref=f"{collection}/{record.id}")
        self.passages: tuple[Passage, ...] = tuple(first.values())
        self.by_id: dict[str, Passage] = first
        superseders: dict[str, list[str]] = {}
        by_fact: dict[str, list[str]] = {}
        grouped: dict[str, list[str]] = {}
        for p in self.passages:
            for target in p.record.supersedes:
                if target in first:
                    superseders.setdefault(target, []).append(p.record.id)
            if p.record.fact_key:
                by_fact.setdefault(p.record.fact_key, []).append(p.record.id)
            grouped.setdefault(document_id(collection, p.record), []).append(p.record.id)
        self.superseders: dict[str, tuple[str, ...]] = {k: tuple(v)
                                                        for k, v in superseders.items()}
        self.fact_keys: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in by_fact.items()}
        self.document_of: dict[str, str] = {rid: doc for doc, ids in grouped.items()
                                            for rid in ids}
        docs: dict[str, Document] = {}
        for doc, ids in grouped.items():
            text = document_text([first[i].record.text for i in ids])
            docs[doc] = Document(document_id=doc, collection=collection, record_ids=tuple(ids),
                                 text=text, tokens=tokens(text))
        self.documents = docs
        self._signatures: dict[str, Signature] = {}
        # token ids first given for this corpus's texts, by table generation: given back to
        # the token table when the corpus is dropped
        self._claims: dict[int, int] = {}
        weakref.finalize(self, release_tokens, self._claims).atexit = False

    def prefix(self, record_id: str) -> array[int]:
        """The deduplication signature of a passage's text (``text.prefix_signature``)."""
        return self.signature(record_id)[0]

    def signature(self, record_id: str, table: TokenTable | None = None) -> Signature:
        """The passage's ``Signature`` (its ``prefix``, shingle count and shingle hashes), its
        keys of ``table`` (by default the current token table): one of another generation is
        computed again."""
        table = token_table() if table is None else table
        found = self._signatures.get(record_id)
        if found is None or found.generation != table.generation:
            before = len(table)
            computed = signature(self.by_id[record_id].record.text, table)
            claims = self._claims
            claims[table.generation] = claims.get(table.generation, 0) + len(table) - before
            if found is None or found.generation < computed.generation:
                self._signatures[record_id] = computed
            return computed
        return found

    def warm(self) -> None:
        """Compute every passage's deduplication signature now."""
        for p in self.passages:
            self.signature(p.record.id)


Corpus = Mapping[str, CollectionCorpus]
"""The usable indexes of the candidate collections, by collection name."""


# --- retrieval (§7.5) -------------------------------------------------------------------------


class Scored(NamedTuple):
    collection: str
    record_id: str
    score: float  # rounded as scores are (§1.8)
    lexical: float = 0.0  # a hybrid list's lexical share, rounded likewise (the floor reads it)


class Retrieval(Protocol):
    """The retrieval lists over a corpus (§7.5's two, and pack-engine/2's hybrid). ``eligible``
    restricts the list to the records of those documents (None: every record of the corpus);
    statistics (N, n(t), avgdl) are always over the whole corpus."""

    def lexical(self, query: str, corpus: Corpus,
                eligible: frozenset[str] | None) -> list[Scored]:
        """BM25 > 0, by BM25 descending, collection, record id; at most 200."""

    def vector(self, query: str, corpus: Corpus,
               eligible: frozenset[str] | None) -> list[Scored]:
        """Cosine ≥ 0.25, by cosine descending, collection, record id; at most 200."""

    def hybrid(self, query: str, corpus: Corpus, eligible: frozenset[str] | None,
               requirement: bool) -> list[Scored]:
        """pack-engine/2's hybrid list (docs/pack-engine.md): fused score > 0, by fused score
        descending, collection, record id; at most 200. ``requirement``: only records sharing
        a query token (§7.5 BM25 > 0) are in it."""
