"""The fast ``Retrieval`` (agent-context-api 7.5): BM25 in-process over the cached postings of
the corpus, pack-engine/2's hybrid list over the cached features (``hybrid``), and the exact
cosine list (``vector_scan``: candidates from the in-process matrices
when held, exact cosines by pgvector's arithmetic, in-process when the server agrees with the
model) with the task embedded per request.

Engine 1's request thread computes its two lists one after the other. Computing the vector
list on another thread while BM25 ran took longer: both need the interpreter's lock between
their many small numpy calls, and a thread waiting for it waits out the switch interval
(retrieval p50 14-15 ms side by side, 10 ms one after the other, in one process). Engine 2's
cosines are one matrix-vector product per collection, so they do run beside its lexical rules
(``hybrid_list``): over 100,000 passages its list's mean went from 26.2 to 22.6 ms."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import numpy as np
from eventsourcing.postgres import PostgresDatastore

from context_service.adapters.pack.corpus import CorpusLoader
from context_service.adapters.pack.hybrid import Part, hybrid_list
from context_service.adapters.pack.lexical import bm25
from context_service.adapters.pack.ranking import LIST_LIMIT, ranked
from context_service.adapters.pack.vector_matrix import Matrix, VectorMatrices
from context_service.adapters.pack.vector_scan import (
    MIN_COSINE_MICROS,
    Fetched,
    MatrixScan,
    VectorScan,
    short,
)
from context_service.domain.pack.model import Corpus, Scored

_SLACK = 1e-6  # raw scores within this of the cut may round to the cut's score

Embed = Callable[[str], Iterable[float] | None]


class FastRetrieval:
    def __init__(self, loader: CorpusLoader, datastore: PostgresDatastore,
                 embed: Embed, matrices: VectorMatrices | None = None) -> None:
        self.loader = loader
        self.datastore = datastore
        self.embed = embed
        self.matrices = matrices
        # half of a scan's matrix products run here (BLAS releases the interpreter's lock, so
        # the two halves take both cores while the request's thread computes the other half),
        # and engine 2's cosines while the request's thread computes its lexical rules
        self._spread = ThreadPoolExecutor(max_workers=2, thread_name_prefix="vector-product")

    def close(self) -> None:
        self._spread.shutdown(wait=True, cancel_futures=True)

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

    def hybrid(self, query: str, corpus: Corpus, eligible: frozenset[str] | None,
               requirement: bool) -> list[Scored]:
        """pack-engine/2's list over the cached features (``hybrid``); only the query is
        analysed and pooled here."""
        chosen = [c for _, c in sorted(corpus.items())]
        parts = [Part(self.loader.hybrid(c), self.loader.lexical(c), eligible) for c in chosen]
        model = self.loader.model
        query_ids = model.token_ids([query])[0] if parts else []
        return hybrid_list(query, parts, query_ids, model.rows, requirement, self._spread)

    def vector(self, query: str, corpus: Corpus,
               eligible: frozenset[str] | None) -> list[Scored]:
        if not corpus:
            return []
        task = self.embed(query)
        if task is None:
            return []
        held = self._held(corpus)
        if held is not None:
            return _complete(MatrixScan(list(task), held, eligible, self._spread))
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return _complete(VectorScan(cur, list(task), corpus, eligible, self.matrices,
                                        self._spread))

    def _held(self, corpus: Corpus) -> list[Matrix] | None:
        """Every index's matrix, by publication, when all are held and the server's cosine is
        the in-process model's; else None."""
        matrices = self.matrices
        if matrices is None or not matrices.exact:
            return None
        held = [matrices.get(c.publication)
                for c in sorted(corpus.values(), key=lambda c: c.publication)]
        return None if None in held else cast(list[Matrix], held)


def _complete(scan: MatrixScan | VectorScan) -> list[Scored]:
    """The scan's list: its first rows, then four times as many until nothing left out can
    count."""
    limit = scan.first_rows()
    while True:
        fetched: Fetched = scan.fetch(limit)
        if not short([fetched]):
            return ranked(fetched.rows, MIN_COSINE_MICROS)
        limit *= 4
