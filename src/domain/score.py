"""Scores as the agent API writes them (spec 1.8): rounded to the nearest multiple of 10^-6, ties
to even, held as whole millionths so ordering compares exactly what is written, and written as a
plain decimal without exponent or trailing zeros (an integer when integral)."""

from __future__ import annotations

import math
from fractions import Fraction

SCALE = 1_000_000
ONE = SCALE  # a score of 1, in millionths


# below this, a float times SCALE has a fractional part to compare (its ulp is at most 2^-4)
_FAST_BELOW = 2.0 ** 48


def to_micros(value: Fraction | int | float) -> int:
    """``value`` rounded to whole millionths, ties to even (exact: no binary rounding first).

    A float takes a fast path when the product ``value * SCALE``, rounded to a float, is far
    from every half-integer: the rounded product is within ``|product| * 2^-53`` of the exact
    one, so when it is more than ``|product| * 2^-50`` from the nearest half-integer, both
    products lie strictly between the same two half-integers and round to the same integer.
    Otherwise (a possible tie, a large or non-finite value) the product is computed exactly."""
    if type(value) is float:
        scaled = value * SCALE
        if -_FAST_BELOW < scaled < _FAST_BELOW:  # false for inf and nan
            floor = math.floor(scaled)
            if abs(scaled - floor - 0.5) > abs(scaled) * 2.0 ** -50:
                return floor if scaled - floor < 0.5 else floor + 1
    elif type(value) is int:
        return value * SCALE
    return round(Fraction(value) * SCALE)


def format_score(micros: int) -> str:
    """``0.032002``, ``0.5``, ``1``, ``0.000001``, ``-0.25``: the JSON text of a rounded score."""
    sign = "-" if micros < 0 else ""
    whole, frac = divmod(abs(micros), SCALE)
    if not frac:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:06d}".rstrip("0")
