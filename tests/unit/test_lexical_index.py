"""The vectorised BM25 index on corpora the reference handles trivially: a corpus whose records
hold no term at all (texts of punctuation only, which a query index accepts) and an empty one
score nothing, like the reference, instead of failing."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_service.adapters.pack.lexical import LexicalIndex, bm25
from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.pack.reference import bm25 as reference_bm25
from context_service.domain.query.scoring import query_terms
from tests.support.hypothesis_profiles import scaled


def _corpus(*texts: str) -> CollectionCorpus:
    records = [QueryRecord(id=f"r{i}", context="notes", type="memory", revision="0" * 64,
                           text=text) for i, text in enumerate(texts)]
    return CollectionCorpus("notes", "0" * 64, 1, records, len)


@pytest.mark.parametrize("texts", [("!",), ("!", "?!", "¢"), ()])
def test_a_corpus_without_terms_scores_nothing(texts: tuple[str, ...]) -> None:
    corpus = _corpus(*texts)
    index = LexicalIndex(corpus)
    assert len(index) == len(texts)
    assert index.posting("w") is None
    scored = bm25("W! who", [index], None)
    assert all(not scores.any() for _, scores in scored)
    assert reference_bm25("W! who", {"notes": corpus}) == {}


def test_terms_next_to_a_record_without_terms_still_score() -> None:
    index = LexicalIndex(_corpus("!", "who fuzzes"))
    [(_, scores)] = bm25("who", [index], None)
    assert scores[0] == 0 and scores[1] > 0


WORDS = ("cfo", "board", "lisbon", "office", "report", "budget", "q3", "the", "appointed", "x")


def term_by_term(query: str, indexes: list[LexicalIndex]) -> list[list[float]]:
    """§7.5 the plain way: each term's contribution added to each index's scores in turn."""
    terms = query_terms(query)
    n_records = sum(len(i) for i in indexes)
    avgdl = sum(i.total_length for i in indexes) / n_records
    out = []
    for index in indexes:
        scores = np.zeros(len(index))
        for term, qtf in terms.items():
            held = sum(len(p[0]) for p in (i.posting(term) for i in indexes) if p is not None)
            idf = math.log(1 + (n_records - held + 0.5) / (held + 0.5))
            posting = index.posting(term)
            if posting is not None:
                rows, tf = posting
                dl = index.lengths[rows]
                scores[rows] += (qtf * idf * tf * (1.2 + 1)
                                 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / avgdl)))
        out.append(scores.tolist())
    return out


@settings(max_examples=scaled(80), deadline=None)
@given(st.lists(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12)
                         .map(" ".join), min_size=1, max_size=8), min_size=1, max_size=3),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join))
def test_the_postings_read_at_once_add_the_same_doubles_as_term_by_term(
        collections: list[list[str]], query: str) -> None:
    # every query term's postings of an index are read at once and summed by bincount in the
    # query's term order: bit for bit what adding term after term gives (§7.5's bytes)
    indexes = [LexicalIndex(_corpus(*texts)) for texts in collections]
    got = [scores.tolist() for _, scores in bm25(query, indexes, None)]
    assert got == term_by_term(query, indexes)
