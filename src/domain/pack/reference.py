"""A reference ``Retrieval`` in plain Python (§7.5): BM25 exactly as specified over a corpus, and
the vector list from given cosines. The unit tests use it, and it is the oracle the fast
adapter is checked against.

BM25 is summed over the distinct query tokens in the order they first occur in the query, in
IEEE-754 doubles, then rounded to millionths (§1.8) for ordering and the cut."""

from __future__ import annotations

import math
from collections.abc import Mapping

from context_service.domain.pack.model import (
    Corpus,
    Passage,
    Scored,
    document_id,
)
from context_service.domain.query.scoring import query_terms, weighted_terms
from context_service.domain.score import SCALE, to_micros

LIST_LIMIT = 200
MIN_COSINE = to_micros(0.25)
K1, B = 1.2, 0.75


def _passages(corpus: Corpus) -> list[Passage]:
    return [p for name in sorted(corpus) for p in corpus[name].passages]


def _eligible(p: Passage, eligible: frozenset[str] | None) -> bool:
    return eligible is None or document_id(p.collection, p.record) in eligible


def bm25(query: str, corpus: Corpus) -> dict[str, float]:
    """BM25 of every record of the corpus with a positive score, by record reference."""
    terms = query_terms(query)
    passages = _passages(corpus)
    if not terms or not passages:
        return {}
    weights = [weighted_terms(p.record.title, p.record.keywords, p.record.text)
               for p in passages]
    n_records = len(passages)
    avgdl = sum(sum(w.values()) for w in weights) / n_records
    df = {t: sum(1 for w in weights if t in w) for t in terms}
    idf = {t: math.log(1 + (n_records - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    out: dict[str, float] = {}
    for p, w in zip(passages, weights, strict=True):
        length = sum(w.values())
        total = 0.0
        matched = False
        for t, qtf in terms.items():
            tf = w.get(t, 0)
            if tf:
                matched = True
                total += qtf * idf[t] * tf * (K1 + 1) / (
                    tf + K1 * (1 - B + B * length / avgdl))
        if matched:
            out[p.ref] = total
    return out


def _ordered(scores: Mapping[str, int]) -> list[Scored]:
    keyed = sorted(((-s, ref.partition("/")[0], ref.partition("/")[2]) for ref, s in
                    scores.items()))
    return [Scored(c, r, -neg / SCALE) for neg, c, r in keyed[:LIST_LIMIT]]


class ReferenceRetrieval:
    """``cosines`` maps a query text to the cosine of each record reference
    (``<collection>/<recordId>``) with it; a query it does not know has an empty vector list."""

    def __init__(self, cosines: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.cosines = cosines or {}

    def lexical(self, query: str, corpus: Corpus,
                eligible: frozenset[str] | None) -> list[Scored]:
        """BM25 > 0, by BM25 descending, collection, record id; at most 200."""
        return _ordered({ref: to_micros(s) for ref, s in bm25(query, corpus).items()
                         if self._eligible(ref, corpus, eligible)})

    def vector(self, query: str, corpus: Corpus,
               eligible: frozenset[str] | None) -> list[Scored]:
        """Cosine ≥ 0.25, by cosine descending, collection, record id; at most 200."""
        scores = {ref: to_micros(c) for ref, c in self.cosines.get(query, {}).items()}
        return _ordered({ref: s for ref, s in scores.items()
                         if s >= MIN_COSINE and self._eligible(ref, corpus, eligible)})

    @staticmethod
    def _eligible(ref: str, corpus: Corpus, eligible: frozenset[str] | None) -> bool:
        collection, _, record_id = ref.partition("/")
        c = corpus.get(collection)
        p = c.by_id.get(record_id) if c is not None else None
        return p is not None and _eligible(p, eligible)
