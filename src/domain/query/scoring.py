"""Scoring and order of query results (spec 5.2).

A record's score for a query is the sum over the query's terms (duplicates kept) of the term's
weighted frequency in the record: 3 per occurrence in the title, 2 in the keywords (joined with
spaces), 1 in the text. Weighted frequencies are what the index stores per (term, record).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from context_service.domain.query.tokenizer import tokenize

TITLE_WEIGHT = 3
KEYWORD_WEIGHT = 2
TEXT_WEIGHT = 1


def weighted_terms(title: str, keywords: Sequence[str], text: str) -> dict[str, int]:
    """Each distinct term of a record with its weighted frequency (always positive)."""
    weights: Counter[str] = Counter(tokenize(text))
    for token in tokenize(" ".join(keywords)):
        weights[token] += KEYWORD_WEIGHT
    for token in tokenize(title):
        weights[token] += TITLE_WEIGHT
    return dict(weights)


def query_terms(query: str) -> dict[str, int]:
    """Each distinct query term with how often the query repeats it."""
    return dict(Counter(tokenize(query)))


def score(weights: Mapping[str, int], terms: Mapping[str, int]) -> int:
    """A record's score; 1 for every record when the query has no terms."""
    if not terms:
        return 1
    return sum(count * weights.get(term, 0) for term, count in terms.items())


def order_key(score_: int, context: str, record_id: str) -> tuple[int, str, str]:
    """Score descending, then context and id ascending by code point."""
    return (-score_, context, record_id)
