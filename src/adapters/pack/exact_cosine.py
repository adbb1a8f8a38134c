"""pgvector's ``a <=> b`` over ``vector(256)``, bit for bit, in numpy: a model of one build
(pgvector 0.8.6 for x86-64 with AVX2 and FMA, as in the embedded server's ``vector.so``), where
eight float32 lanes accumulate fused multiply-adds, are reduced in a fixed tree and divided in
double. ``agrees`` asks the connected server whether it computes the same bits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

DIM = 256
LANES = 8  # one AVX2 register of float32: lane k accumulates the components i = 8j + k
STEPS = DIM // LANES  # 256 is a multiple of 8: pgvector's tail loops never run

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

# In float32's normal range a float64 is a float32 midpoint exactly when its fraction ends in
# a one and 28 zeros: shifted left by 35, its bits are then 2**63 (as int64: the least value).
_SHIFT, _MIDPOINT = 35, np.iinfo(np.int64).min
_NORMAL_EXPONENT = -125  # np.frexp's exponent of 2**-126, float32's least normal number

_SQL = ("SELECT array_agg(r.v <=> q.v ORDER BY q.i, r.i) AS distances"
        " FROM (SELECT v::vector(256) AS v, i FROM unnest(%(rows)s::text[])"
        " WITH ORDINALITY AS u(v, i)) r CROSS JOIN (SELECT v::vector(256) AS v, i"
        " FROM unnest(%(probes)s::text[]) WITH ORDINALITY AS u(v, i)) q")


def fma32(a: npt.ArrayLike, b: npt.ArrayLike, c: npt.ArrayLike) -> F32:
    """``a * b + c`` of finite float32 arrays (broadcast), rounded once to float32."""
    a64, b64, c64 = (np.atleast_1d(np.asarray(x, np.float32)).astype(np.float64)
                     for x in (a, b, c))
    with np.errstate(over="ignore", invalid="ignore"):
        return _rounded(a64 * b64, c64)


def _rounded(p: F64, c: F64) -> F32:
    """``p + c`` rounded once to float32, for ``p`` an exact product of two float32 and ``c``
    a float32 (both held in float64).

    Why this is exact: ``p`` has at most 48 significant bits and ``|p|, |c|`` lie in
    [2**-298, 2**256], so TwoSum is exact: ``p + c == s + e`` with ``s = fl64(p + c)`` and
    ``|e| <= ulp64(s) / 2``. Rounding to float32 is constant between consecutive float32
    midpoints (``2**128 - 2**103``, where it turns to infinity, included), and every midpoint
    is a float64 number (25 significant bits, at least 2**-150). So ``float32(s)`` can differ
    from the rounding of ``s + e`` only if a midpoint ``m`` lies between them, ends included.
    ``m`` strictly between would be a float64 nearer to ``p + c`` than ``s``: impossible;
    ``m == s + e != s`` would make ``p + c`` a float64, hence ``s == p + c`` and ``e == 0``.
    So ``m == s``: with ``e == 0`` the cast's ties-to-even is the rule; with ``e != 0`` the
    exact sum lies strictly on ``e``'s side of ``m``, nearer than any other midpoint, and
    rounds to the neighbour on that side."""
    s = p + c
    bb = s - p
    e = (p - (s - bb)) + (c - bb)
    r = s.astype(np.float32)
    wrong = _halfway(s) & (((e > 0) & (r < s)) | ((e < 0) & (r > s)))
    r[wrong] = np.nextafter(r[wrong], np.copysign(np.inf, e[wrong]).astype(np.float32))
    return r


def _halfway(s: F64) -> npt.NDArray[np.bool_]:
    """Where ``s`` lies exactly halfway between two float32 neighbours."""
    bits = np.ascontiguousarray(s).view(np.uint64) << np.uint64(_SHIFT)
    half: npt.NDArray[np.bool_] = (bits.view(np.int64) == _MIDPOINT) & (np.abs(s) < 2.0**128)
    small = np.abs(s) < 2.0**-126  # there the midpoints are the odd multiples of 2**-150
    half[small] = np.fmod(np.abs(s[small]) * 2.0**150, 2.0) == 1.0
    return half


def _sums(products: Callable[[int, F64], object], m: int) -> F32:
    """pgvector's float32 sums of ``m`` rows of 256 products, ``products(j, out)`` writing
    step ``j``'s exact products (m, 8). Each step's ``s = p + acc`` rounded by a cast is the
    fused rounding unless ``s`` is a float32 midpoint, or below 2**-126 (where midpoints
    follow another pattern): those few go through ``_rounded``, so every step is pgvector's."""
    p, s, mantissas, acc = (np.empty((m, LANES)) for _ in range(4))
    bits, exponents = np.empty((m, LANES), np.uint64), np.empty((m, LANES), np.int32)
    acc[...] = 0.0
    for j in range(STEPS):
        products(j, p)
        np.add(p, acc, out=s)
        np.left_shift(s.view(np.uint64), np.uint64(_SHIFT), out=bits)
        np.frexp(s, out=(mantissas, exponents))  # 0 for zero, infinity and NaN
        odd = None
        if (np.minimum.reduce(bits.view(np.int64), axis=None, initial=0) == _MIDPOINT
                or np.minimum.reduce(exponents, axis=None, initial=0) < _NORMAL_EXPONENT):
            odd = (bits.view(np.int64) == _MIDPOINT) | (exponents < _NORMAL_EXPONENT)
            exact = _rounded(p[odd], acc[odd])
        acc[...] = s.astype(np.float32)
        if odd is not None:
            acc[odd] = exact
    return _reduced(acc.astype(np.float32))


def _reduced(lanes: F32) -> F32:
    """pgvector's horizontal sum of the eight lanes, in float32."""
    y = lanes[:, :4] + lanes[:, 4:]
    z = y[:, :2] + y[:, 2:]
    total: F32 = z[:, 0] + z[:, 1]
    return total


def _vectors(found: Any, ndim: int) -> F32:
    if not (isinstance(found, np.ndarray) and found.dtype == np.float32
            and found.ndim == ndim and found.shape[-1] == DIM):
        raise ValueError(f"expected float32 vectors of {DIM} dimensions")
    return found


def square_norms(rows: F32) -> F32:
    """pgvector's float32 ``a·a`` of each row of an (n, 256) float32 matrix."""
    if not np.isfinite(_vectors(rows, 2)).all():
        raise ValueError("pgvector stores no NaN or infinite component")
    steps = rows.reshape(-1, STEPS, LANES)
    with np.errstate(over="ignore", invalid="ignore"):
        return _sums(lambda j, out: np.multiply(steps[:, j], steps[:, j], out=out,
                                                dtype=np.float64), len(rows))


def distances(rows: F32, row_norms: F32, task: F32) -> F64:
    """``rows[i] <=> task`` as pgvector computes it, the rows (stored pgvector vectors, whose
    ``square_norms`` are ``row_norms``) being the first operand; NaN for a zero vector."""
    n = len(_vectors(rows, 2))
    if not np.isfinite(_vectors(task, 1)).all() or np.shape(row_norms) != (n,):
        raise ValueError("a finite task and one square norm per row are needed")
    steps, t = rows.reshape(n, STEPS, LANES), task.astype(np.float64).reshape(STEPS, LANES)

    def products(j: int, out: F64) -> None:
        np.multiply(steps[:, j], t[j], out=out[:n])
        np.multiply(t[j], t[j], out=out[n])  # and the task's own b·b, in the same chain

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        sums = _sums(products, n + 1).astype(np.float64)
        sim = sums[:n] / np.sqrt(np.asarray(row_norms, np.float32).astype(np.float64) * sums[n])
        # x86 maxsd(-1.0, sim) gives sim when sim is NaN: so does np.maximum
        found: F64 = np.where(sim > 1.0, 0.0, 1.0 - np.maximum(sim, -1.0))
    return found


def sample() -> tuple[F32, F32]:
    """A fixed sample: 512 vectors (unit; scaled by 1e-6 to 1e6 as wholes times 1e-2 to 1e2
    per component; by 1e-40 to 1e-30 or 1e15 to 1e20; sparse; zero; an opposite) and 3 probes
    (unit, scaled by 1e-3, one of the vectors)."""
    rng = np.random.default_rng(20250806)
    rows = rng.standard_normal((512, DIM))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rows[192:384] *= 10.0 ** rng.uniform(-6, 6, (192, 1)) * 10.0 ** rng.uniform(-2, 2, (192, DIM))
    rows[384:448] *= 10.0 ** np.r_[rng.uniform(-40, -30, 32), rng.uniform(15, 20, 32)][:, None]
    rows[448:480] *= rng.random((32, DIM)) < 0.1
    rows[480], rows[8] = 0.0, -rows[7]
    probes = rng.standard_normal((3, DIM)) * [[1.0], [1e-3], [1.0]]
    probes[0], probes[2] = probes[0] / np.linalg.norm(probes[0]), rows[7]
    return rows.astype(np.float32), probes.astype(np.float32)


def literal(vector: F32) -> str:
    """pgvector's text form of a vector, each float32 exactly (pgvector reads it with strtof)."""
    return "[" + ",".join(repr(x) for x in vector.astype(np.float64).tolist()) + "]"


def same(found: F64, expected: F64) -> bool:
    """Whether two arrays of distances are equal bit for bit, any NaN equal to any NaN (the
    text form, and PostgreSQL's ordering, tell NaNs apart no further)."""
    nan = np.isnan(expected)
    return bool(np.array_equal(np.isnan(found), nan) and np.array_equal(
        found[~nan].view(np.int64), expected[~nan].view(np.int64)))


def agrees(cur: Any) -> bool:
    """Whether the connected server's ``<=>`` gives, for the sample, exactly ``distances``."""
    rows, probes = sample()
    cur.execute(_SQL, {"rows": [literal(r) for r in rows],
                       "probes": [literal(p) for p in probes]}, binary=True)
    row = cur.fetchone()
    found = np.asarray(row["distances"] if isinstance(row, Mapping) else row[0], np.float64)
    norms = square_norms(rows)
    expected = np.concatenate([distances(rows, norms, probe) for probe in probes])
    return found.shape == expected.shape and same(found, expected)
