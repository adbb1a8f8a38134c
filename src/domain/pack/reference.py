"""A reference ``Retrieval`` in plain Python (§7.5): BM25 exactly as specified over a corpus, and
the vector list from given cosines. The unit tests use it, and it is the oracle the fast
adapter is checked against."""

from __future__ import annotations

from collections.abc import Mapping

from context_service.domain.pack.model import Corpus, Scored

LIST_LIMIT = 200
MIN_COSINE = 0.25
K1, B = 1.2, 0.75


class ReferenceRetrieval:
    """``cosines`` maps a query text to the cosine of each record reference
    (``<collection>/<recordId>``) with it; a query it does not know has an empty vector list."""

    def __init__(self, cosines: Mapping[str, Mapping[str, float]] | None = None) -> None:
        self.cosines = cosines or {}

    def lexical(self, query: str, corpus: Corpus,
                eligible: frozenset[str] | None) -> list[Scored]:
        """BM25 > 0, by BM25 descending, collection, record id; at most 200."""
        raise NotImplementedError

    def vector(self, query: str, corpus: Corpus,
               eligible: frozenset[str] | None) -> list[Scored]:
        """Cosine ≥ 0.25, by cosine descending, collection, record id; at most 200."""
        raise NotImplementedError
