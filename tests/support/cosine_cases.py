"""Inputs for the tests of the exact cosine model: an exact rational fused multiply-add, a plain
one-pair-at-a-time reading of pgvector's ``cosine_distance``, fused multiply-adds whose float64
sum lands exactly on a float32 midpoint, and vectors that make pgvector's own chains do so."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np

F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
TIE_TO_INFINITY = Fraction(2**128)  # IEEE rounds as if 2**128 (an even significand) existed

Reduce = Callable[[list[np.float32]], np.float32]


def _value(x: np.float32) -> Fraction:
    return TIE_TO_INFINITY * int(np.sign(x)) if np.isinf(x) else Fraction(float(x))


def nearest_float32(exact: Fraction, negative_zero: bool = False) -> np.float32:
    """The float32 nearest to ``exact``, ties to even, past the largest float32 by half a step
    or more infinity (IEEE 754); an exact zero is -0.0 when ``negative_zero``."""
    if exact == 0:
        return F32(-0.0) if negative_zero else F32(0.0)
    size = abs(exact)
    exponent = size.numerator.bit_length() - size.denominator.bit_length()
    if size < Fraction(2) ** exponent:
        exponent -= 1  # now 2**exponent <= size < 2**(exponent + 1)
    step = Fraction(2) ** (max(exponent, -126) - 23)  # float32's spacing there
    units = round(size / step)  # Fraction rounds half to even
    value = math.copysign(units * step if units * step < TIE_TO_INFINITY else math.inf, exact)
    return F32(value)


def fma_reference(a: np.float32, b: np.float32, c: np.float32) -> np.float32:
    """``a * b + c`` in exact rational arithmetic, rounded once (``a``, ``b`` finite)."""
    if np.isinf(c):
        return c
    product = Fraction(float(a)) * Fraction(float(b))
    product_negative = math.copysign(1.0, float(a)) * math.copysign(1.0, float(b)) < 0
    # an exact zero is -0.0 only as the sum of two negative zeros (round to nearest)
    negative_zero = product == 0 and product_negative and float(c) == 0 and (
        math.copysign(1.0, float(c)) < 0)
    return nearest_float32(product + Fraction(float(c)), negative_zero)


def pgvector_tree(lanes: list[np.float32]) -> np.float32:
    y = [lanes[k] + lanes[k + 4] for k in range(4)]
    return (y[0] + y[2]) + (y[1] + y[3])


def pgvector_sum(a: np.ndarray, b: np.ndarray, reduce: Reduce = pgvector_tree) -> np.float32:
    """pgvector 0.8.6's float32 ``a·b`` (AVX2 build), one component at a time: eight lanes of
    fused multiply-adds, then ``reduce``."""
    lanes = [F32(0.0)] * 8
    for i in range(len(a)):
        lanes[i % 8] = fma_reference(a[i], b[i], lanes[i % 8])
    return reduce(lanes)


def pgvector_similarity(a: np.ndarray, b: np.ndarray, reduce: Reduce = pgvector_tree) -> float:
    with np.errstate(all="ignore"):
        return float(np.float64(pgvector_sum(a, b, reduce)) / np.sqrt(
            np.float64(pgvector_sum(a, a, reduce)) * np.float64(pgvector_sum(b, b, reduce))))


def pgvector_distance(a: np.ndarray, b: np.ndarray, reduce: Reduce = pgvector_tree) -> float:
    """``a <=> b``: 0 past a similarity of 1, else ``1 - max(-1, sim)``, NaN staying NaN."""
    sim = pgvector_similarity(a, b, reduce)
    if sim > 1.0:
        return 0.0
    return 1.0 - sim if math.isnan(sim) else 1.0 - max(-1.0, sim)


def is_midpoint_case(a: np.float32, b: np.float32, c: np.float32) -> bool:
    """Whether float64's sum of ``a * b`` and ``c`` is exactly halfway between two float32
    neighbours while the exact sum is not."""
    s = float(a) * float(b) + float(c)
    with np.errstate(over="ignore"):
        near = F32(s)
    if float(near) == s:
        return False
    other = np.nextafter(near, F32(np.inf) if float(near) < s else F32(-np.inf))
    halfway = abs(Fraction(s) - _value(near)) == abs(_value(other) - Fraction(s))
    return halfway and Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)) != s


def _near_one() -> list[tuple[np.float32, np.float32]]:
    """Pairs of float32 whose product is 1 off by less than 2**-29, not exactly 1."""
    pairs = []
    for i in range(1, 40_000, 7):
        a = F32(1.0 + i * 2.0**-23)
        inverse = F32(1.0 / float(a))
        for b in (inverse, np.nextafter(inverse, F32(0.0)), np.nextafter(inverse, F32(2.0))):
            if 0.0 < abs(float(a) * float(b) - 1.0) < 2.0**-29:
                pairs.append((a, b))
    return pairs


def midpoint_cases(rng: np.random.Generator) -> list[tuple[np.float32, np.float32, np.float32]]:
    """Triples whose float64 sum is a float32 midpoint with a non-zero error: ``a·b`` is a
    power of two ``2**q`` off by less than 2**-29 of it, and ``c`` has a float32 spacing of
    2**(q+1), so ``c + 2**q`` is a midpoint and the error is below half of float64's spacing;
    ``q`` spans normal numbers, float32's subnormal range and its overflow boundary."""
    cases = []
    for a, b in _near_one():
        mantissa = float(rng.integers(1, 2**23)) * 2.0**-23
        sign = -1.0 if rng.random() < 0.5 else 1.0
        normal = int(rng.integers(-100, 100))
        for q, c in ((normal, sign * math.ldexp(1.0 + mantissa, normal + 24)),
                     (-150, sign * math.ldexp(1.0 + mantissa, -126)),  # spacing 2**-149
                     (-150, sign * math.ldexp(0.5 + mantissa / 2, -126)),  # subnormal
                     (103, FLT_MAX)):  # halfway between the largest float32 and infinity
            half = q // 2
            case = (F32(math.ldexp(float(a), half)), F32(math.ldexp(float(b), q - half)),
                    F32(c))
            if is_midpoint_case(*case):
                cases.append(case)
    return cases


# Two pairs of float32 whose product is 2**-24 just above and just below: added to a float32
# in [1, 2) (spacing 2**-23) they land on a midpoint, with an error of +2**-60 and -2**-70.
ABOVE = (F32(2.0**-24 * (1 + 2.0**-12)), F32(1 - 4095 * 2.0**-24))
BELOW = (F32(2.0**-24 * (1 + 2.0**-23)), F32(1 - 2.0**-23))


def midpoint_rows(rng: np.random.Generator, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and a task whose dot product hits a float32 midpoint with a non-zero error at the
    second step of lanes 0 and 1 (components 8 and 9, after components 0 and 1 put a random
    float32 in [1, 2) into the lanes): in every row ties-to-even rounds one of them wrong."""
    rows = (rng.standard_normal((count, 256)) * 1e-3).astype(np.float32)  # lanes stay in [1, 2)
    task = rng.standard_normal(256).astype(np.float32)
    task[[0, 1, 8, 9]] = (1.0, 1.0, ABOVE[1], BELOW[1])
    starts = rng.integers(0, 2**23, (count, 2))
    starts[:, 1] = starts[:, 1] & ~1 | starts[:, 0] & 1  # the same parity: one lane tied wrong
    rows[:, :2] = 1.0 + starts * 2.0**-23
    rows[:, 8], rows[:, 9] = ABOVE[0], BELOW[0]
    return rows, task


def mixed_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    """Vectors of mixed magnitudes: unit, scaled as a whole from 1e-8 to 1e8 and per
    component over four decades, sparse."""
    rows = rng.standard_normal((count, 256))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    quarter = count // 4
    rows[quarter:] *= 10.0 ** rng.uniform(-8, 8, (count - quarter, 1))
    rows[2 * quarter:] *= 10.0 ** rng.uniform(-2, 2, (count - 2 * quarter, 256))
    rows[3 * quarter:] *= rng.random((count - 3 * quarter, 256)) < 0.2
    return rows.astype(np.float32)


def edge_rows(task: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A zero vector, the task itself, scaled near-copies of it (whose similarity can pass
    1), its opposite and near-opposites, and vectors of subnormal or overflowing squares."""
    copies = (task[None, :] * rng.uniform(0.1, 10.0, (40, 1))).astype(np.float32)
    tiny = (rng.standard_normal((4, 256)) * 1e-41).astype(np.float32)
    huge = (rng.standard_normal((4, 256)) * 1e20).astype(np.float32)
    both = np.concatenate([tiny[:2, :128], huge[:2, 128:]], axis=1)
    return np.concatenate([np.zeros((1, 256), np.float32), task[None, :], -task[None, :],
                           copies, -copies, tiny, huge, both]).astype(np.float32)
