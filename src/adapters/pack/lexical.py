"""BM25 of agent-context-api 7.5 over a corpus, vectorised: each usable index keeps its
postings (per term, record rows and weighted term frequencies) and record lengths as arrays;
corpus statistics (N, n(t), avgdl) are summed over the collections of the request.

Each term's contribution is computed with the spec's formula in float64, in the same operation
order as the reference, and added per record in query-term order (first appearance)."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.query.scoring import query_terms, weighted_terms

K1, B = 1.2, 0.75

Rows = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


class LexicalIndex:
    """The postings of one collection corpus (immutable, built once per publication)."""

    def __init__(self, corpus: CollectionCorpus) -> None:
        self.collection = corpus.collection
        self.record_ids = [p.record.id for p in corpus.passages]
        documents = sorted(set(corpus.document_of.values()))
        number = {doc: i for i, doc in enumerate(documents)}
        self.documents = documents
        self.document_rows = np.array([number[corpus.document_of[rid]]
                                       for rid in self.record_ids], dtype=np.int64)
        rows: dict[str, list[int]] = {}
        freqs: dict[str, list[int]] = {}
        lengths = []
        for row, passage in enumerate(corpus.passages):
            r = passage.record
            weights = weighted_terms(r.title, r.keywords, r.text)
            lengths.append(sum(weights.values()))
            for term, tf in weights.items():
                rows.setdefault(term, []).append(row)
                freqs.setdefault(term, []).append(tf)
        self.lengths: Floats = np.array(lengths, dtype=np.float64)
        self.total_length = sum(lengths)
        self.postings: dict[str, tuple[Rows, Floats]] = {
            t: (np.array(rows[t], dtype=np.int64), np.array(freqs[t], dtype=np.float64))
            for t in rows}

    def __len__(self) -> int:
        return len(self.record_ids)

    def mask(self, eligible: frozenset[str]) -> npt.NDArray[np.bool_]:
        wanted = np.array([doc in eligible for doc in self.documents], dtype=np.bool_)
        if not len(wanted):
            return np.zeros(len(self), dtype=np.bool_)
        result: npt.NDArray[np.bool_] = wanted[self.document_rows]
        return result


def bm25(query: str, indexes: Iterable[LexicalIndex],
         eligible: frozenset[str] | None) -> list[tuple[LexicalIndex, Floats]]:
    """Each index with the BM25 of its records, 0 for the ineligible ones."""
    chosen = list(indexes)
    terms = query_terms(query)
    n_records = sum(len(i) for i in chosen)
    if not terms or not n_records:
        return []
    avgdl = sum(i.total_length for i in chosen) / n_records
    idf = {}
    for term in terms:
        n = sum(len(i.postings[term][0]) for i in chosen if term in i.postings)
        idf[term] = math.log(1 + (n_records - n + 0.5) / (n + 0.5))
    out: list[tuple[LexicalIndex, Floats]] = []
    for index in chosen:
        scores = np.zeros(len(index), dtype=np.float64)
        for term, qtf in terms.items():
            posting = index.postings.get(term)
            if posting is None:
                continue
            rows, tf = posting
            dl = index.lengths[rows]
            scores[rows] += (qtf * idf[term] * tf * (K1 + 1)
                             / (tf + K1 * (1 - B + B * dl / avgdl)))
        if eligible is not None:
            scores[~index.mask(eligible)] = 0.0
        out.append((index, scores))
    return out
