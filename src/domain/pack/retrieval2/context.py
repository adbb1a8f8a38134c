"""Rule 6b, a record's vector in its context: where a document's neighbouring records are
related (a test on their cosines, once per publication), each record's vector takes in the mean
of its neighbours' at ``CONTEXT_WEIGHT``, then unit length and the grid again. A reply whose
words say little ("Yep, that's the one") is retrieved by what the conversation around it says.

Cosines here are of grid vectors, in ``fusion.COSINE_UNIT``s (integers): the test is exact."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from context_service.domain.pack.retrieval2.fusion import on_grid

CONTEXT_WEIGHT = 0.3
RELATED_Z = 2  # standard errors above the collection's mean pair cosine
MIN_PAIRS = 2  # a document needs at least this many neighbouring pairs to be tested


def pair_mean(total: Sequence[int], squares: int, n: int) -> Fraction:
    """The mean cosine of two distinct records of a collection of ``n``: from ``total`` (the
    sum of the grid vectors, per component, in grid steps) and ``squares`` (the sum of each
    record's cosine with itself): ``(|sum|^2 - squares) / (n (n - 1))``."""
    if n < 2:
        return Fraction(0)
    return Fraction(sum(t * t for t in total) - squares, n * (n - 1))


def related(pairs: int, total: int, squares: int, baseline: Fraction) -> bool:
    """Whether a document's neighbouring records are related: its ``pairs`` cosines (their
    ``total`` and the ``squares`` of each) have a mean above ``baseline`` (``pair_mean``) by at
    least ``RELATED_Z`` standard errors (population deviation over the square root of
    ``pairs``), with at least ``MIN_PAIRS`` pairs."""
    if pairs < MIN_PAIRS:
        return False
    mean = Fraction(total, pairs)
    variance = Fraction(squares, pairs) - mean * mean
    gap = mean - baseline
    return gap > 0 and gap * gap * pairs >= RELATED_Z * RELATED_Z * variance


def in_context(vector: Sequence[float], neighbours: Sequence[Sequence[float]]) -> list[float]:
    """A record's vector plus ``CONTEXT_WEIGHT`` x the mean of its neighbours' (one or two),
    scaled to unit length and rounded to the grid; unchanged without neighbours."""
    if not neighbours:
        return list(vector)
    mixed = [v + CONTEXT_WEIGHT * sum(n[i] for n in neighbours) / len(neighbours)
             for i, v in enumerate(vector)]
    norm = math.sqrt(sum(x * x for x in mixed))
    return [on_grid(x / norm) if norm else 0.0 for x in mixed]
