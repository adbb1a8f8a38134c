"""The fast ``Retrieval`` (agent-context-api 7.5): BM25 in-process over the cached postings of
the corpus, and the exact cosine scan in PostgreSQL with the task embedded per request.

The vector scan reads ``agent_passages`` (the embedding on the passage row) for indexes that
are current, and joins ``passage_features`` by embedded-text hash for older ones (a pack at an
earlier position)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from eventsourcing.postgres import PostgresDatastore

from context_service.adapters.pack.corpus import CorpusLoader
from context_service.adapters.pack.lexical import bm25
from context_service.adapters.pack.ranking import LIST_LIMIT, ranked
from context_service.domain.pack.model import CollectionCorpus, Corpus, Scored
from context_service.projections.passage_features.features import embedded_text, text_hash

MIN_COSINE_MICROS = 250_000
_SLACK = 1e-6  # raw scores within this of the cut may round to the cut's score
_MARGIN = 64  # rows fetched past the cut, so ties in rounding are usually settled in one go

Embed = Callable[[str], Iterable[float] | None]


class FastRetrieval:
    def __init__(self, loader: CorpusLoader, datastore: PostgresDatastore,
                 embed: Embed) -> None:
        self.loader = loader
        self.datastore = datastore
        self.embed = embed

    def lexical(self, query: str, corpus: Corpus,
                eligible: frozenset[str] | None) -> list[Scored]:
        scored = bm25(query, [self.loader.lexical(c) for _, c in sorted(corpus.items())],
                      eligible)
        if not scored:
            return []
        everything = np.concatenate([scores for _, scores in scored])
        positive = int(np.count_nonzero(everything > 0))
        if positive == 0:
            return []
        floor = 0.0
        if positive > LIST_LIMIT:
            floor = float(np.partition(everything, -LIST_LIMIT)[-LIST_LIMIT]) - _SLACK
        candidates: list[tuple[float, str, str]] = []
        for index, scores in scored:
            rows = np.flatnonzero((scores > 0) & (scores >= floor))
            candidates.extend((float(scores[r]), index.collection, index.record_ids[r])
                              for r in rows.tolist())
        return ranked(candidates, 0)

    def vector(self, query: str, corpus: Corpus,
               eligible: frozenset[str] | None) -> list[Scored]:
        if not corpus:
            return []
        task = self.embed(query)
        if task is None:
            return []
        literal = "[" + ",".join(repr(float(x)) for x in task) + "]"
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            current = _current(cur, [c.publication for c in corpus.values()])
            scan = _Scan(cur, literal, corpus, current, eligible)
            rows = scan.top(LIST_LIMIT + _MARGIN, None)
            if len(rows) == LIST_LIMIT + _MARGIN:
                cut = rows[LIST_LIMIT - 1][0]
                if round(rows[-1][0], 6) >= round(cut, 6) - 1e-6:
                    rows = scan.top(None, cut - _SLACK)
        return ranked(rows, MIN_COSINE_MICROS)


def _current(cur: Any, publications: list[int]) -> set[int]:
    cur.execute("SELECT publication FROM agent_collections WHERE publication = ANY(%s)",
                (publications,))
    return {r["publication"] for r in cur.fetchall()}


class _Scan:
    """The cosine of every eligible record with a vector, best first, raw ≥ a floor."""

    def __init__(self, cur: Any, task: str, corpus: Corpus, current: set[int],
                 eligible: frozenset[str] | None) -> None:
        self.cur = cur
        self.task = task
        self.eligible = eligible
        self.current = [c for c in corpus.values() if c.publication in current]
        self.older = [c for c in corpus.values() if c.publication not in current]

    def top(self, limit: int | None, floor: float | None) -> list[tuple[float, str, str]]:
        minimum = 0.2499995 - _SLACK if floor is None else max(floor, 0.2499995 - _SLACK)
        parts, params = [], {"task": self.task, "minimum": minimum}
        if self.current:
            where = ""
            if self.eligible is not None:
                where = " AND document_id = ANY(%(documents)s)"
                params["documents"] = [d.encode("utf-8", "surrogatepass")
                                       for d in self.eligible]
            params["publications"] = [c.publication for c in self.current]
            parts.append("SELECT collection, record_id, 1 - (embedding <=> %(task)s::vector)"
                         " AS cosine FROM agent_passages WHERE publication = ANY(%(publications)s)"
                         f" AND embedding IS NOT NULL{where}")
        if self.older:
            names, ids, hashes = _older_rows(self.older, self.eligible)
            params.update(names=names, ids=ids, hashes=hashes)
            parts.append("SELECT h.collection, h.record_id, 1 - (f.embedding <=> %(task)s::vector)"
                         " AS cosine FROM unnest(%(names)s::text[], %(ids)s::bytea[],"
                         " %(hashes)s::bytea[]) AS h(collection, record_id, hash)"
                         " JOIN passage_features f ON f.hash = h.hash"
                         " WHERE f.embedding IS NOT NULL")
        if not parts:
            return []
        sql = ("SELECT * FROM (" + " UNION ALL ".join(parts) + ") s"
               " WHERE s.cosine >= %(minimum)s ORDER BY s.cosine DESC")
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        self.cur.execute(sql, params)
        return [(float(r["cosine"]), r["collection"],
                 bytes(r["record_id"]).decode("utf-8", "surrogatepass"))
                for r in self.cur.fetchall()]


def _older_rows(corpora: Iterable[CollectionCorpus], eligible: frozenset[str] | None,
                ) -> tuple[list[str], list[bytes], list[bytes]]:
    names, ids, hashes = [], [], []
    for corpus in corpora:
        for passage in corpus.passages:
            if eligible is not None and corpus.document_of[passage.record.id] not in eligible:
                continue
            names.append(corpus.collection)
            ids.append(passage.record.id.encode("utf-8", "surrogatepass"))
            hashes.append(text_hash(embedded_text(passage.record)))
    return names, ids, hashes
