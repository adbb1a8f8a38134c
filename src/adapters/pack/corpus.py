"""The corpus loader (agent-context-api 7.4): each usable index read once from the log by the
position of its publication, with token counts from ``passage_features``, and kept in-process
(an index at a position never changes), least recently used first out past a record bound."""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from eventsourcing.postgres import PostgresDatastore

from context_service.adapters.pack.lexical import LexicalIndex
from context_service.adapters.postgres.views.published import index_records, published_at
from context_service.domain.context.events import QueryIndexPublished, QueryRecord
from context_service.domain.pack.model import CollectionAt, CollectionCorpus, Corpus, TokenCount
from context_service.projections.passage_features.features import PublishedTexts, text_hash

log = logging.getLogger(__name__)


class Cached:
    __slots__ = ("corpus", "lexical")

    def __init__(self, corpus: CollectionCorpus) -> None:
        corpus.warm()  # deduplication signatures paid once at load, not by the first packs
        self.corpus = corpus
        self.lexical = LexicalIndex(corpus)


class CorpusLoader:
    """``CorpusReads``: ``count`` is used only for a text whose features are not stored yet
    (the features view behind the log); packs wait for that view, so normally never."""

    def __init__(self, datastore: PostgresDatastore, count: TokenCount,
                 max_records: int = 200_000) -> None:
        self.datastore = datastore
        self.count = count
        self.max_records = max_records
        self._cache: OrderedDict[int, Cached] = OrderedDict()
        self._records = 0
        self._lock = threading.Lock()
        self.loads = 0  # indexes read from the log (misses)

    def holds(self, publication: int) -> bool:
        with self._lock:
            return publication in self._cache

    def has_room(self) -> bool:
        with self._lock:
            return self._records < self.max_records

    def passages(self) -> int:
        with self._lock:
            return self._records

    def corpus(self, collections: Sequence[CollectionAt]) -> Corpus:
        return {c.name: self.cached(c).corpus for c in collections if c.usable}

    def cached(self, collection: CollectionAt) -> Cached:
        with self._lock:
            hit = self._cache.get(collection.publication)
            if hit is not None:
                self._cache.move_to_end(collection.publication)
                return hit
        loaded = Cached(self._load(collection))
        with self._lock:
            if collection.publication not in self._cache:
                self._cache[collection.publication] = loaded
                self._records += len(loaded.corpus.passages)
                self.loads += 1
                while self._records > self.max_records and len(self._cache) > 1:
                    _, evicted = self._cache.popitem(last=False)
                    self._records -= len(evicted.corpus.passages)
            return self._cache[collection.publication]

    def lexical(self, corpus: CollectionCorpus) -> LexicalIndex:
        with self._lock:
            hit = self._cache.get(corpus.publication)
        if hit is not None and hit.corpus is corpus:
            return hit.lexical
        return LexicalIndex(corpus)

    def _load(self, collection: CollectionAt) -> CollectionCorpus:
        with self.datastore.transaction(commit=False) as cur:
            recorded = published_at(cur, collection.publication)
            if recorded is None or recorded.stream.key != collection.name:
                raise LookupError(f"no index of {collection.name!r} published at "
                                  f"{collection.publication}")
            assert isinstance(recorded.event, QueryIndexPublished)
            records = index_records(cur, recorded)
            tokens = self._tokens(cur, collection.name, records)
        return CollectionCorpus(collection.name, recorded.event.revision,
                                collection.publication, records, tokens)

    def _tokens(self, cur: object, collection: str,
                records: Sequence[QueryRecord]) -> TokenCount:
        texts = PublishedTexts()
        texts.add_index(collection, records)
        cur.execute("SELECT hash, tokens FROM passage_features WHERE hash = ANY(%s)",  # type: ignore[attr-defined]
                    (list(texts.counted),))
        counts = {bytes(r["hash"]): r["tokens"] for r in cur.fetchall()}  # type: ignore[attr-defined]
        if len(counts) < len(texts.counted):
            log.warning("token counts computed for texts without stored features",
                        extra={"collection": collection,
                               "texts": len(texts.counted) - len(counts)})

        def tokens(text: str) -> int:
            key = text_hash(text)
            found = counts.get(key)
            if found is None:
                found = counts[key] = self.count(text)
            return found

        return tokens
