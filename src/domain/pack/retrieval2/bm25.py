"""Rule 2, BM25 over the analyzer's terms (k1 1.2, b 0.75), with a query whose terms may carry
any positive weight (feedback's re-weighted query). Corpus statistics (N, n(t), avgdl) are over
every record of the request's collections, as in engine 1.

Each term's contribution is ``weight x IDF x tf x (k1 + 1) / (tf + k1 x (1 - b + b x |r| /
avgdl))`` in IEEE-754 doubles, added per record in the query's term order. The service's
vectorised sums (``adapters.pack.hybrid.bm25``) group the same formula otherwise (the parts that
do not depend on the request are computed at load), so a score may differ from this one in its
last bit; both round to the same millionths (§1.8), which is what a list holds and what the
tests compare. The rules after BM25 (4, 4b, 5) are computed operation for operation."""

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
    weights = {t: idf(n_records, holding[t]) for t in scored}
    out = []
    for r, length in zip(records, lengths, strict=True):
        total = 0.0
        for t, w in scored.items():
            tf = r.get(t, 0)
            if tf:
                total += w * weights[t] * tf * (K1 + 1) / (
                    tf + K1 * (1 - B + B * length / avgdl))
        out.append(total)
    return out
