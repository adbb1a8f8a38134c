"""Rules 6 and 7, the vectors and the fusion.

Rule 6: a record's vector pools the embedding model's pieces of its embedded text, each row
weighted by count x IDF (``bm25.idf`` over the collection's piece counts); the collection's mean
record vector is subtracted and the result scaled to unit length; a query the same way, with
the collection's weights and mean. Components are then rounded to multiples of 2^-10
(``GRID``): a product of two is a multiple of 2^-20 and every partial sum of a cosine stays
below 2 in magnitude, so a float32 dot product is exact in any order and a cosine is an
integer number of ``COSINE_UNIT`` whatever the BLAS.

Rule 7: a record's fused score is its lexical share (score over the list's maximum, 0 when no
record scores) plus 0.35 x (cosine - mean) / (3 x standard deviation), mean and deviation over
every record of the request's collections (0 when the deviation is 0). A record is a candidate
when its fused score is above 0 and, if it has no lexical score, when its cosine is at least
``COSINE_ONLY_MARGIN`` deviations above the mean (``admitted``): on its cosine alone a record
must stand out, not merely lie above the average of a small collection."""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

GRID_BITS = 10
GRID = 2.0 ** -GRID_BITS
COSINE_UNIT = 2.0 ** -(2 * GRID_BITS)
VECTOR_WEIGHT = 0.35
SPREAD = 3.0
COSINE_ONLY_MARGIN = 1.0  # deviations above the mean, for a record without lexical score


def on_grid(value: float) -> float:
    """A unit vector's component rounded to the grid (ties to even)."""
    return round(value / GRID) * GRID


def cosine_moments(units: Iterable[int]) -> tuple[float, float]:
    """The mean and the (population) standard deviation of cosines given in ``COSINE_UNIT``s."""
    n = total = squares = 0
    for u in units:
        n += 1
        total += u
        squares += u * u
    return moments(n, total, squares)


def moments(n: int, total: int, squares: int) -> tuple[float, float]:
    """The mean and deviation from the count, sum and sum of squares of cosines in
    ``COSINE_UNIT``s: computed exactly and rounded once, the same in every process."""
    if not n:
        return 0.0, 0.0
    mean = Fraction(total, n)
    variance = Fraction(squares, n) - mean * mean
    return float(mean * Fraction(COSINE_UNIT)), math.sqrt(variance) * COSINE_UNIT


def lexical_share(score: float, top: float) -> float:
    return score / top if top > 0 else 0.0


def fused(share: float, cosine: float, mean: float, deviation: float) -> float:
    """Rule 7 for one record (the service computes the same operations over arrays)."""
    if deviation <= 0:
        return share
    return share + VECTOR_WEIGHT * (cosine - mean) / (SPREAD * deviation)


def admitted(lexical: float, cosine: float, mean: float, deviation: float,
             fused_score: float) -> bool:
    """Whether a record (its lexical score, its cosine, the request's moments, its fused score)
    is a candidate of the hybrid list."""
    if fused_score <= 0:
        return False
    return lexical > 0 or cosine - mean >= COSINE_ONLY_MARGIN * deviation
