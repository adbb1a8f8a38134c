"""Scores rounded to millionths (spec 1.8): the fast path for floats rounds exactly as the
exact product does, ties and near-ties included."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.score import SCALE, to_micros


def exact(value: float) -> int:
    return round(Fraction(value) * SCALE)


def near_ties() -> list[float]:
    """Floats nearest to (k + 1/2) / 10^6 and their neighbours, where a rounded product can
    land on the wrong side of the tie."""
    out: list[float] = []
    for k in (*range(-3, 4), 249_999, 250_000, 499_999, 999_999, 123_456_789, 2**40):
        tie = (k + 0.5) / SCALE
        for v in (tie, -tie):
            out += [v, math.nextafter(v, math.inf), math.nextafter(v, -math.inf)]
            out += [math.nextafter(math.nextafter(v, math.inf), math.inf)]
    return out


@pytest.mark.parametrize("value", near_ties())
def test_a_float_near_a_tie_rounds_as_the_exact_product(value: float) -> None:
    assert to_micros(value) == exact(value)


def test_exact_ties_round_to_even() -> None:
    assert to_micros(0.5) == 500_000
    assert to_micros(2.5e-6) == exact(2.5e-6)
    assert to_micros(0.0000005) == exact(0.0000005)
    assert to_micros(2**-21) == exact(2**-21)  # 0.476837158203125 µ, exactly representable
    assert to_micros(3 * 2**-21) == exact(3 * 2**-21)
    assert to_micros(-0.0) == 0


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_float_rounds_as_the_exact_product(value: float) -> None:
    assert to_micros(value) == exact(value)


@given(st.floats(-2.0, 2.0))
def test_scores_in_the_usual_range_round_as_the_exact_product(value: float) -> None:
    assert to_micros(value) == exact(value)


@given(st.integers(-(10**30), 10**30))
def test_integers_and_fractions_are_exact(value: int) -> None:
    assert to_micros(value) == value * SCALE
    assert to_micros(Fraction(value, 7)) == round(Fraction(value, 7) * SCALE)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_non_finite_float_is_refused_as_before(value: float) -> None:
    with pytest.raises((OverflowError, ValueError)):
        to_micros(value)
