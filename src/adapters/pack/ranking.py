"""Ordering and cutting a retrieval list (agent-context-api 7.5): scores rounded as the API
writes them (1.8), descending, then collection and record id (code points), at most 200."""

from __future__ import annotations

from collections.abc import Iterable

from context_service.domain.pack.model import Scored
from context_service.domain.score import SCALE, to_micros

LIST_LIMIT = 200


def ranked(candidates: Iterable[tuple[float, str, str]], minimum_micros: int,
           limit: int = LIST_LIMIT) -> list[Scored]:
    """``candidates`` (raw score, collection, record id) whose rounded score is at least
    ``minimum_micros``, ordered and cut. The caller may pass only the candidates within 1e-6
    of the limit-th best raw score: rounding is monotone, so nothing it leaves out can rank
    before the cut."""
    rounded = []
    for raw, collection, record_id in candidates:
        micros = to_micros(raw)
        if micros >= minimum_micros:
            rounded.append((-micros, collection, record_id))
    rounded.sort()
    return [Scored(collection, record_id, -negative / SCALE)
            for negative, collection, record_id in rounded[:limit]]
