"""BM25 of agent-context-api 7.5 over a corpus, vectorised: each usable index keeps its
postings (per term, record rows and weighted term frequencies) and record lengths as arrays;
corpus statistics (N, n(t), avgdl) are summed over the collections of the request.

Each term's contribution is computed with the spec's formula in float64, in the same operation
order as the reference, and added per record in query-term order (first appearance)."""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.query.scoring import query_terms, weighted_terms

K1, B = 1.2, 0.75
# A term's entry in the postings' dictionary beyond its string: the slot, the (lo, hi) tuple
# and its two integers (measured with tracemalloc, rounded up).
TERM_OVERHEAD = 150

Rows = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


class LexicalIndex:
    """The postings of one collection corpus (immutable, built once per publication): per term,
    the rows of the records holding it (ascending) and its weighted frequency there, as one
    pair of arrays sorted by term with each term's range."""

    def __init__(self, corpus: CollectionCorpus) -> None:
        self.collection = corpus.collection
        self.record_ids = [p.record.id for p in corpus.passages]
        documents = sorted(set(corpus.document_of.values()))
        number = {doc: i for i, doc in enumerate(documents)}
        self.documents = documents
        self.document_rows = np.array([number[corpus.document_of[rid]]
                                       for rid in self.record_ids], dtype=np.int64)
        terms: dict[str, int] = {}
        numbers = itertools.count()  # unique (not dense) term numbers: one per look-up
        flat_terms: list[int] = []
        flat_tf: list[int] = []
        counts: list[int] = []
        lengths = np.zeros(len(self.record_ids), dtype=np.float64)
        for row, passage in enumerate(corpus.passages):
            r = passage.record
            weights = weighted_terms(r.title, r.keywords, r.text)
            flat_terms.extend(map(terms.setdefault, weights, numbers))
            flat_tf.extend(weights.values())
            counts.append(len(weights))
            lengths[row] = sum(weights.values())
        flat = np.array(flat_terms, dtype=np.int64)
        rows = np.repeat(np.arange(len(counts), dtype=np.int64),
                         np.array(counts, dtype=np.int64))
        order = np.argsort(flat, kind="stable")  # by term, rows ascending within a term
        ordered = flat[order]
        self._rows: Rows = rows[order]
        self._tf: Floats = np.array(flat_tf, dtype=np.float64)[order]
        if len(ordered):
            starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
            ends = np.r_[starts[1:], len(ordered)]
        else:  # no record holds a term (texts of punctuation only): no postings at all
            starts = ends = np.zeros(0, dtype=np.int64)
        ranges = dict(zip(ordered[starts].tolist(),
                          zip(starts.tolist(), ends.tolist(), strict=True), strict=True))
        self._ranges: dict[str, tuple[int, int]] = {t: ranges[i] for t, i in terms.items()}
        self.lengths: Floats = lengths
        self.total_length = int(lengths.sum())

    def __len__(self) -> int:
        return len(self.record_ids)

    def nbytes(self) -> int:
        """An estimate of what the index holds: its arrays, and each term of its dictionary."""
        arrays = (self._rows.nbytes + self._tf.nbytes + self.lengths.nbytes
                  + self.document_rows.nbytes)
        terms = sum(map(sys.getsizeof, self._ranges)) + TERM_OVERHEAD * len(self._ranges)
        return arrays + terms + 8 * (len(self.record_ids) + len(self.documents))

    def rows_at(self, at: Rows) -> Rows:
        rows: Rows = self._rows[at]
        return rows

    def tf_at(self, at: Rows) -> Floats:
        tf: Floats = self._tf[at]
        return tf

    def posting(self, term: str) -> tuple[Rows, Floats] | None:
        found = self._ranges.get(term)
        if found is None:
            return None
        lo, hi = found
        return self._rows[lo:hi], self._tf[lo:hi]

    def spans(self, terms: Iterable[str]) -> tuple[Rows, Rows]:
        """Where each term's postings start and end (both 0 for a term no record holds)."""
        found = [self._ranges.get(t, (0, 0)) for t in terms]
        lo = np.array([f[0] for f in found], dtype=np.int64)
        hi = np.array([f[1] for f in found], dtype=np.int64)
        return lo, hi

    def mask(self, eligible: frozenset[str]) -> npt.NDArray[np.bool_]:
        wanted = np.array([doc in eligible for doc in self.documents], dtype=np.bool_)
        if not len(wanted):
            return np.zeros(len(self), dtype=np.bool_)
        result: npt.NDArray[np.bool_] = wanted[self.document_rows]
        return result


def bm25(query: str, indexes: Iterable[LexicalIndex],
         eligible: frozenset[str] | None) -> list[tuple[LexicalIndex, Floats]]:
    """Each index with the BM25 of its records, 0 for the ineligible ones.

    An index's postings of every query term are read at once, in query-term order, and summed
    per record by ``bincount``, which adds in that order: the same doubles as adding term after
    term (the reference's order), for a cost per index rather than per term and index."""
    chosen = list(indexes)
    terms = query_terms(query)
    n_records = sum(len(i) for i in chosen)
    if not terms or not n_records:
        return []
    avgdl = sum(i.total_length for i in chosen) / n_records
    spans = [index.spans(terms) for index in chosen]
    holding = sum((hi - lo for lo, hi in spans), np.zeros(len(terms), dtype=np.int64))
    # qtf x IDF per term, in Python floats as the reference multiplies them
    weights = np.array([qtf * math.log(1 + (n_records - n + 0.5) / (n + 0.5))
                        for qtf, n in zip(terms.values(), holding.tolist(), strict=True)],
                       dtype=np.float64)
    out: list[tuple[LexicalIndex, Floats]] = []
    for index, (lo, hi) in zip(chosen, spans, strict=True):
        scores = np.zeros(len(index), dtype=np.float64)
        at, lengths = span_positions(lo, hi)
        if len(at):
            rows, tf = index.rows_at(at), index.tf_at(at)
            dl = index.lengths[rows]
            contribution = (np.repeat(weights, lengths) * tf * (K1 + 1)
                            / (tf + K1 * (1 - B + B * dl / avgdl)))
            scores += np.bincount(rows, weights=contribution, minlength=len(scores))
        if eligible is not None:
            scores[~index.mask(eligible)] = 0.0
        out.append((index, scores))
    return out


def span_positions(lo: Rows, hi: Rows) -> tuple[Rows, Rows]:
    """The positions ``lo[i] .. hi[i] - 1`` for every i, in order, and each span's length."""
    lengths = hi - lo
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64), lengths
    before = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return np.repeat(lo - before, lengths) + np.arange(total), lengths
