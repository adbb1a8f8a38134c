"""Rule 2, BM25 over the analyzer's terms (k1 1.2, b 0.75), with a query whose terms may carry
any positive weight (feedback's re-weighted query). Corpus statistics (N, n(t), avgdl) are over
every record of the request's collections, as in engine 1.

Each term's contribution is ``weight x IDF x tf x (k1 + 1) / (tf + k1 x (1 - b + b x |r| /
avgdl))``, added per record in the query's term order. In IEEE-754 doubles it is computed in
one order, the service's (``adapters.pack.hybrid.bm25``, whose request-free parts are computed
at load): ``tf x (k1 + 1) / (|r| x (k1 x b / avgdl) + (tf + k1 x (1 - b))) x (weight x IDF)``.
Grouped otherwise, a score could differ in its last bit, and a share or a score exactly half a
millionth from two millionths (§1.8) would then round to either. The rules after BM25 (4, 4b,
5) are computed operation for operation too."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from context_service.domain.pack.retrieval2.feedback import selective

K1, B = 1.2, 0.75


def idf(n_records: int, holding: int) -> float:
    """``ln(1 + (N - n + 0.5) / (n + 0.5))``: of a term held by ``holding`` of ``n_records``
    records (also the vectors' piece weight, rule 6)."""
    return math.log(1 + (n_records - holding + 0.5) / (holding + 0.5))


def bm25(query: Mapping[str, float], records: Sequence[Mapping[str, int]],
         expansion: AbstractSet[str] = frozenset()) -> list[float]:
    """The BM25 of each record (its weighted term frequencies) for a weighted query; a term of
    ``expansion`` (feedback's new terms) is left out where it is not ``selective`` (rule 3)."""
    n_records = len(records)
    if not n_records or not query:
        return [0.0] * n_records
    lengths = [sum(r.values()) for r in records]
    avgdl = sum(lengths) / n_records
    holding = {t: sum(1 for r in records if t in r) for t in query}
    scored = {t: w for t, w in query.items()
              if t not in expansion or selective(holding[t], n_records)}
    if avgdl <= 0:  # no record holds a term (stop words only): nothing can match
        return [0.0] * n_records
    factors = {t: w * idf(n_records, holding[t]) for t, w in scored.items()}
    per_length = K1 * B / avgdl
    out = []
    for r, length in zip(records, lengths, strict=True):
        total = 0.0
        for t, factor in factors.items():
            tf = r.get(t, 0)
            if tf:
                total += tf * (K1 + 1) / (length * per_length + (tf + K1 * (1 - B))) * factor
        out.append(total)
    return out
