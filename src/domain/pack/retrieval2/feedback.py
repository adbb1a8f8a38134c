"""Rule 3, deterministic pseudo-relevance feedback (RM3): the query re-weighted from the terms
of its first hits, then scored again.

The first 5 hits with a positive score (by score, then collection, then record id) each weigh
their score over the five scores' sum; a term's weight in a hit is its count over the hit's
length (``analyzer.record_bag``: title, keywords and text counted once each); the 10 terms of
highest summed weight (ties by term) make the expansion. The new query gives each original term
``0.5 x count / query length`` and adds ``0.5 x weight / (sum of the 10 weights)`` to each
expansion term.

Feedback runs only when at least ``FEEDBACK_MIN_MATCHES`` records score in the first pass (twice
the hits it reads): when the hits are all or most of what matches, they select nothing, and
their majority vocabulary would only outweigh the query's own terms (a small collection).

In the second pass an expansion term that is not one of the query's own terms scores nothing
when more than 9 records in 10 of the request's collections hold it (``selective``): its IDF is
then below 0.105, so it hardly tells records apart, and its postings are the longest to score
(on the 100,000-passage benchmark such terms were three quarters of the second pass's work)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

FEEDBACK_HITS = 5
FEEDBACK_TERMS = 10
FEEDBACK_MIN_MATCHES = 2 * FEEDBACK_HITS
ORIGINAL_WEIGHT = 0.5
COMMON_SHARE = (9, 10)  # an expansion term held by more than this share of records: not scored


def informative(matches: int) -> bool:
    """Whether a first pass where ``matches`` records score positive feeds back (rule 3)."""
    return matches >= FEEDBACK_MIN_MATCHES


def selective(holding: int, n_records: int) -> bool:
    """Whether an expansion term held by ``holding`` of ``n_records`` records is scored in the
    second pass: not when more than 9 records in 10 hold it (integers: no rounding)."""
    above, of = COMMON_SHARE
    return holding * of <= above * n_records


def expansion(hits: Sequence[tuple[float, Mapping[str, int]]]) -> list[tuple[str, float]]:
    """The expansion terms and their weights, from the hits in rank order (score, bag); at most
    ``FEEDBACK_TERMS``, by weight descending, then term."""
    total = sum(score for score, _ in hits)
    if not hits or total <= 0:
        return []
    weights: dict[str, float] = {}
    for score, bag in hits:
        share = score / total
        length = sum(bag.values())
        if not length:
            continue
        for term, count in bag.items():
            weights[term] = weights.get(term, 0.0) + share * count / length
    ranked = sorted(weights.items(), key=lambda tw: (-tw[1], tw[0]))
    return ranked[:FEEDBACK_TERMS]


def feedback_query(query: Mapping[str, int],
                   expanded: Sequence[tuple[str, float]]) -> dict[str, float]:
    """The re-weighted query: its terms first (query order), then the new expansion terms."""
    length = sum(query.values())
    out: dict[str, float] = {}
    if length:
        for term, count in query.items():
            out[term] = ORIGINAL_WEIGHT * count / length
    z = sum(w for _, w in expanded)
    if z > 0:
        for term, w in expanded:
            out[term] = out.get(term, 0.0) + (1 - ORIGINAL_WEIGHT) * w / z
    return out
