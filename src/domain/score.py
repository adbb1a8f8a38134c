"""Scores as the agent API writes them (spec 1.8): rounded to the nearest multiple of 10^-6, ties
to even, held as whole millionths so ordering compares exactly what is written, and written as a
plain decimal without exponent or trailing zeros (an integer when integral)."""

from __future__ import annotations

from fractions import Fraction

SCALE = 1_000_000
ONE = SCALE  # a score of 1, in millionths


def to_micros(value: Fraction | int | float) -> int:
    """``value`` rounded to whole millionths, ties to even (exact: no binary rounding first)."""
    return round(Fraction(value) * SCALE)


def format_score(micros: int) -> str:
    """``0.032002``, ``0.5``, ``1``, ``0.000001``, ``-0.25``: the JSON text of a rounded score."""
    sign = "-" if micros < 0 else ""
    whole, frac = divmod(abs(micros), SCALE)
    if not frac:
        return f"{sign}{whole}"
    return f"{sign}{whole}.{frac:06d}".rstrip("0")
