"""The relevance floor: a pack stops taking task candidates once every remaining one's lexical
share (its lexical score over the list's maximum, ``fusion.lexical_share``) is below
``LEXICAL_FLOOR``. A list where no record scores lexically (the vectors alone found it) has no
floor. The floor judges the tail only: it never ends a list within its first
``FLOOR_DEPTH`` candidates, where a share relative to one dominant hit says little about the
others. Measured on both development collections (docs/pack-engine.md)."""

from __future__ import annotations

from collections.abc import Sequence

LEXICAL_FLOOR = 0.45
FLOOR_DEPTH = 10


def floor_cut(shares: Sequence[float], floor: float = LEXICAL_FLOOR,
              depth: int = FLOOR_DEPTH) -> int:
    """How many candidates of a list (their lexical shares, in list order) the floor keeps: all
    of them up to the last whose share is at least ``floor``, and at least the first ``depth``."""
    if floor <= 0 or not shares or max(shares) <= 0:
        return len(shares)
    for at in range(len(shares), depth, -1):
        if shares[at - 1] >= floor:
            return at
    return min(depth, len(shares))
