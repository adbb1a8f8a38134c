"""The exact cosine model without a database: ``fma32`` is the exact rational ``a * b + c``
rounded once (also where float64's sum lands on a float32 midpoint, which a plain cast of it
gets wrong), and ``distances`` / ``square_norms`` are a one-pair-at-a-time reading of pgvector's
algorithm, bit for bit; another order of the lane sums or a rounding without the midpoint
correction gives other bits, so these comparisons can fail."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.adapters.pack import exact_cosine
from context_service.adapters.pack.exact_cosine import distances, fma32, same, square_norms
from tests.support.cosine_cases import (
    ABOVE,
    BELOW,
    F32,
    FLT_MAX,
    edge_rows,
    fma_reference,
    midpoint_cases,
    midpoint_rows,
    mixed_rows,
    pgvector_distance,
    pgvector_similarity,
    pgvector_sum,
)

FINITE32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
MODERATE32 = st.floats(width=32, min_value=-(2.0**40), max_value=2.0**40)


def _bits(values: Any) -> list[int]:
    return np.asarray(values, dtype=np.float32).view(np.int32).tolist()


def _check_fma(triples: list[tuple[float, float, float]]) -> None:
    a, b, c = (np.asarray(column, dtype=np.float32) for column in zip(*triples, strict=True))
    expected = [fma_reference(F32(x), F32(y), F32(z)) for x, y, z in triples]
    assert _bits(fma32(a, b, c)) == _bits(expected)


@given(st.lists(st.tuples(FINITE32, FINITE32, FINITE32), min_size=1, max_size=40))
def test_fma32_rounds_any_float32_triple_once(triples: list[tuple[float, float, float]],
                                              ) -> None:
    _check_fma(triples)


@st.composite
def _cancelling(draw: st.DrawFn) -> tuple[float, float, float]:
    """``c`` near ``-a*b`` times a power of two, a few float32 steps off: long float64 sums."""
    a, b = draw(MODERATE32), draw(MODERATE32)
    with np.errstate(over="ignore"):
        c = F32(-float(a) * float(b) * 2.0 ** draw(st.integers(-40, 40)))
    for _ in range(draw(st.integers(-3, 3)) % 7):
        c = np.nextafter(c, F32(np.inf))
    return a, b, float(c) if np.isfinite(c) else FLT_MAX


@given(st.lists(_cancelling(), min_size=1, max_size=40))
def test_fma32_rounds_cancelling_sums_once(triples: list[tuple[float, float, float]]) -> None:
    _check_fma(triples)


def test_fma32_rounds_a_float64_sum_on_a_midpoint_to_its_errors_side() -> None:
    cases = midpoint_cases(np.random.default_rng(7))
    a, b, c = (np.asarray(column, dtype=np.float32) for column in zip(*cases, strict=True))
    expected = _bits([fma_reference(*case) for case in cases])
    assert _bits(fma32(a, b, c)) == expected
    with np.errstate(over="ignore"):
        plain = _bits((a.astype(np.float64) * b.astype(np.float64) + c).astype(np.float32))
    wrong = [x != y for x, y in zip(plain, expected, strict=True)]
    assert len(cases) > 1000 and sum(wrong) > len(cases) // 3  # a plain cast fails here
    normal, subnormal = np.abs(c) >= 2.0**-126, np.abs(c) < 2.0**-126
    overflow_boundary = c == np.float32(FLT_MAX)
    for kind in (normal & ~overflow_boundary, subnormal, overflow_boundary):
        assert any(w for w, k in zip(wrong, kind, strict=True) if k)


@pytest.fixture(scope="module")
def inputs() -> list[tuple[np.ndarray, np.ndarray]]:
    """(rows, task) groups: mixed magnitudes against two tasks, edge cases, midpoint rows."""
    rng = np.random.default_rng(11)
    rows = mixed_rows(rng, 8)
    unit, scaled = (rng.standard_normal((2, 256)) * [[0.06], [40.0]]).astype(np.float32)
    crossing, task = midpoint_rows(rng, 10)
    edges = edge_rows(unit, rng)[[0, 1, 2, 3, 4, 5, 43, 44, 83, 85, 87, 89, 91]]
    return [(rows, unit), (rows, scaled), (edges, unit), (crossing, task)]


@pytest.fixture(scope="module")
def expected(inputs: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    return [np.asarray([pgvector_distance(r, task) for r in rows]) for rows, task in inputs]


def _model(inputs: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    return [distances(rows, square_norms(rows), task) for rows, task in inputs]


def test_distances_and_norms_are_pgvectors_bit_for_bit(
        inputs: list[tuple[np.ndarray, np.ndarray]], expected: list[np.ndarray]) -> None:
    for found, wanted in zip(_model(inputs), expected, strict=True):
        assert same(found, wanted)
    rows = inputs[2][0]
    assert _bits(square_norms(rows)) == _bits([pgvector_sum(r, r) for r in rows])
    edge = expected[2]
    assert np.isnan(edge[0]) and edge[1] == 0.0 and edge[2] == 2.0  # zero, itself, opposite
    # subnormal components: their squares vanish, the similarity is infinite; overflowing
    # squares: an infinite norm, a similarity of 0
    assert set(edge[-5:-3].tolist()) <= {0.0, 2.0} and edge[-3] == edge[-2] == 1.0


def test_a_near_copy_can_pass_similarity_one_and_gets_distance_zero() -> None:
    rng = np.random.default_rng(5)
    task = rng.standard_normal(256).astype(np.float32)
    copies = edge_rows(task, rng)[3:13]
    passing = [r for r in copies if pgvector_similarity(r, task) > 1.0]
    assert passing and (distances(np.asarray(passing), square_norms(np.asarray(passing)),
                                  task) == 0.0).all()


def _pairwise(lanes: np.ndarray) -> np.ndarray:
    return lanes.sum(axis=1, dtype=np.float32)  # numpy's own (pairwise) order


def _in_order(lanes: np.ndarray) -> np.ndarray:
    return np.add.accumulate(lanes, axis=1)[:, -1]


def _cast(p: np.ndarray, c: np.ndarray) -> np.ndarray:
    return (p + c).astype(np.float32)


@pytest.mark.parametrize(("name", "wrong"), [("_reduced", _pairwise), ("_reduced", _in_order),
                                             ("_rounded", _cast)])
def test_another_order_or_rounding_gives_other_bits(
        monkeypatch: pytest.MonkeyPatch, inputs: list[tuple[np.ndarray, np.ndarray]],
        expected: list[np.ndarray], name: str, wrong: Any) -> None:
    monkeypatch.setattr(exact_cosine, name, wrong)
    found = _model(inputs)
    assert not all(same(f, e) for f, e in zip(found, expected, strict=True))
    if name == "_rounded":  # only the midpoint rows tell it apart
        assert same(found[0], expected[0]) and not same(found[3], expected[3])


def test_the_midpoint_rows_products_are_a_power_of_two_just_off() -> None:
    def product(pair: tuple[np.float32, np.float32]) -> Fraction:
        return Fraction(float(pair[0])) * Fraction(float(pair[1]))

    assert product(ABOVE) == Fraction(1, 2**24) + Fraction(1, 2**60)
    assert product(BELOW) == Fraction(1, 2**24) - Fraction(1, 2**70)


def test_inputs_pgvector_refuses_are_refused_and_no_rows_give_none() -> None:
    rows = np.ones((2, 256), np.float32)
    with pytest.raises(ValueError):
        square_norms(np.full((1, 256), np.inf, np.float32))
    with pytest.raises(ValueError):
        distances(rows, square_norms(rows), np.full(256, np.nan, np.float32))
    with pytest.raises(ValueError):
        distances(rows.astype(np.float64), square_norms(rows), rows[0])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        distances(rows, square_norms(rows), rows[0, :128])
    empty = np.empty((0, 256), np.float32)
    assert distances(empty, square_norms(empty), rows[0]).shape == (0,)


def test_the_sample_is_fixed() -> None:
    first, second = exact_cosine.sample(), exact_cosine.sample()
    assert all(np.array_equal(x, y) for x, y in zip(first, second, strict=True))
    assert first[0].shape == (512, 256) and first[1].shape == (3, 256)
