"""The vectorised BM25 index on corpora the reference handles trivially: a corpus whose records
hold no term at all (texts of punctuation only, which a query index accepts) and an empty one
score nothing, like the reference, instead of failing."""

from __future__ import annotations

import pytest

from context_service.adapters.pack.lexical import LexicalIndex, bm25
from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.pack.reference import bm25 as reference_bm25


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
