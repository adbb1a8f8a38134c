"""The fast ``Retrieval`` (agent-context-api 7.5): BM25 in-process over the cached postings of
the corpus, and the exact cosine scan in PostgreSQL with the task embedded per request.

The vector scan reads ``agent_passages`` (the embedding on the passage row) for indexes that
are current, and joins ``passage_features`` by embedded-text hash for older ones (a pack at an
earlier position)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import numpy as np
from eventsourcing.postgres import PostgresDatastore

from context_service.adapters.pack.corpus import CorpusLoader
from context_service.adapters.pack.lexical import bm25
from context_service.adapters.pack.ranking import LIST_LIMIT, ranked
from context_service.domain.pack.model import CollectionCorpus, Corpus, Later, Pending, Scored
from context_service.projections.passage_features.features import embedded_text, text_hash

MIN_COSINE_MICROS = 250_000
_SLACK = 1e-6  # raw scores within this of the cut may round to the cut's score
_MARGIN = 64  # rows fetched past the cut, so ties in rounding are usually settled in one go

Embed = Callable[[str], Iterable[float] | None]


class FastRetrieval:
    def __init__(self, loader: CorpusLoader, datastore: PostgresDatastore,
                 embed: Embed, scans: int = 4) -> None:
        self.loader = loader
        self.datastore = datastore
        self.embed = embed
        # vector scans run here while the request's thread computes BM25: the scan waits on
        # PostgreSQL (another core), so the two lists take about the time of the longer one
        self._scans = ThreadPoolExecutor(max_workers=scans, thread_name_prefix="vector-scan")

    def close(self) -> None:
        self._scans.shutdown(wait=True, cancel_futures=True)

    def lexical(self, query: str, corpus: Corpus,
                eligible: frozenset[str] | None) -> list[Scored]:
        scored = bm25(query, [self.loader.lexical(c) for _, c in sorted(corpus.items())],
                      eligible)
        if not scored:
            return []
        # only the positive scores are ordered (most records of a corpus score 0)
        hits = [(index, rows, scores[rows]) for index, scores in scored
                if len(rows := np.flatnonzero(scores > 0))]
        if not hits:
            return []
        positive = np.concatenate([values for _, _, values in hits])
        floor = 0.0
        if len(positive) > LIST_LIMIT:
            floor = float(np.partition(positive, -LIST_LIMIT)[-LIST_LIMIT]) - _SLACK
        candidates: list[tuple[float, str, str]] = []
        for index, rows, values in hits:
            keep = values >= floor
            candidates.extend(zip(values[keep].tolist(), itertools.repeat(index.collection),
                                  [index.record_ids[r] for r in rows[keep].tolist()],
                                  strict=False))
        return ranked(candidates, 0)

    def vector_soon(self, query: str, corpus: Corpus,
                    eligible: frozenset[str] | None) -> Pending:
        try:
            return self._scans.submit(self.vector, query, corpus, eligible)
        except RuntimeError:  # shut down: the caller's thread computes it
            return Later(partial(self.vector, query, corpus, eligible))

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
            scan = _Scan(cur, literal, corpus, eligible)
            rows = scan.top(LIST_LIMIT + _MARGIN, None)
            if len(rows) == LIST_LIMIT + _MARGIN:
                cut = rows[LIST_LIMIT - 1][0]
                if round(rows[-1][0], 6) >= round(cut, 6) - 1e-6:
                    rows = scan.top(None, cut - _SLACK)
        return ranked(rows, MIN_COSINE_MICROS)


class _Scan:
    """The cosine of every eligible record with a vector, best first (raw ≥ a floor, if one).

    The distance is computed once per row (in the sort key, never also in a filter) and the
    floor of 0.25 is applied by ``ranked``; rows of the current indexes are found by a range of
    publications, with a list only when other current indexes fall inside that range."""

    def __init__(self, cur: Any, task: str, corpus: Corpus,
                 eligible: frozenset[str] | None) -> None:
        self.cur = cur
        self.task = task
        self.eligible = eligible
        ours = {c.publication for c in corpus.values()}
        lo, hi = min(ours), max(ours)
        cur.execute("SELECT publication FROM agent_collections"
                    " WHERE publication BETWEEN %s AND %s", (lo, hi))
        stored = {r["publication"] for r in cur.fetchall()}
        self.current = sorted(ours & stored)
        self.others = sorted(stored - ours)  # current indexes of other collections in range
        self.older = [c for c in corpus.values() if c.publication not in stored]

    def top(self, limit: int | None, floor: float | None) -> list[tuple[float, str, str]]:
        parts: list[str] = []
        params: dict[str, Any] = {"task": self.task}
        if self.current:
            where = " AND document_id = ANY(%(documents)s)" if self.eligible is not None else ""
            if self.eligible is not None:
                params["documents"] = [d.encode("utf-8", "surrogatepass")
                                       for d in self.eligible]
            if self.others:
                where += (" AND publication <> ALL(%(others)s)"
                          if len(self.others) < len(self.current)
                          else " AND publication = ANY(%(current)s)")
                params.update(others=self.others, current=self.current)
            params.update(lo=self.current[0], hi=self.current[-1])
            parts.append("SELECT collection, record_id, embedding <=> %(task)s::vector"
                         " AS distance FROM agent_passages"
                         " WHERE publication BETWEEN %(lo)s AND %(hi)s"
                         f" AND embedding IS NOT NULL{where}")
        if self.older:
            names, ids, hashes = _older_rows(self.older, self.eligible)
            params.update(names=names, ids=ids, hashes=hashes)
            parts.append("SELECT h.collection, h.record_id, f.embedding <=> %(task)s::vector"
                         " AS distance FROM unnest(%(names)s::text[], %(ids)s::bytea[],"
                         " %(hashes)s::bytea[]) AS h(collection, record_id, hash)"
                         " JOIN passage_features f ON f.hash = h.hash"
                         " WHERE f.embedding IS NOT NULL")
        if not parts:
            return []
        sql = "SELECT * FROM (" + " UNION ALL ".join(parts) + ") s"
        if floor is not None:  # a little past the floor: the exact test is on 1 - distance
            sql += " WHERE s.distance <= %(ceiling)s"
            params["ceiling"] = 1.0 - floor + _SLACK
        sql += " ORDER BY s.distance"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        self.cur.execute(sql, params)
        rows = [(1.0 - float(r["distance"]), r["collection"],
                 bytes(r["record_id"]).decode("utf-8", "surrogatepass"))
                for r in self.cur.fetchall()]
        return rows if floor is None else [r for r in rows if r[0] >= floor]


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
