"""Rules 4 and 5, evidence from a passage's document (§5.2: its ``file``, or the record alone):

- neighbour turns: add 0.5 x what the higher score of the previous and the next record of the
  same document, in publication order, has beyond the record's own (0 when it has no more; a
  record without a ``file`` has no neighbours): a neighbour lends the evidence a record lacks;
- document prior: then add 0.3 x the best score among the records of the same document (a
  record alone in its document adds 0.3 x its own, which changes no order among such records).

Both read the scores of every record of a collection; plain-list forms of what the service
computes over arrays."""

from __future__ import annotations

from collections.abc import Sequence

NEIGHBOUR_WEIGHT = 0.5
DOCUMENT_PRIOR_WEIGHT = 0.3
NONE = -1  # no neighbour


def with_neighbours(scores: Sequence[float], previous: Sequence[int],
                    following: Sequence[int]) -> list[float]:
    """Each score plus ``NEIGHBOUR_WEIGHT`` x how far the higher of its neighbours' (rows, or
    NONE) exceeds it (nothing when neither does)."""
    out = []
    for s, p, n in zip(scores, previous, following, strict=True):
        best = max(scores[p] if p != NONE else 0.0, scores[n] if n != NONE else 0.0)
        out.append(s + NEIGHBOUR_WEIGHT * max(best - s, 0.0))
    return out


def with_document_prior(scores: Sequence[float], documents: Sequence[int]) -> list[float]:
    """Each score plus ``DOCUMENT_PRIOR_WEIGHT`` x the best score of its document (numbers)."""
    best: dict[int, float] = {}
    for s, d in zip(scores, documents, strict=True):
        best[d] = max(best.get(d, 0.0), s)
    return [s + DOCUMENT_PRIOR_WEIGHT * best[d] for s, d in zip(scores, documents, strict=True)]


def neighbours_in_order(documents: Sequence[int], has_file: Sequence[bool],
                        ) -> tuple[list[int], list[int]]:
    """The previous and the next row of each row's document, in row (publication) order."""
    previous = [NONE] * len(documents)
    following = [NONE] * len(documents)
    last: dict[int, int] = {}
    for row, (d, filed) in enumerate(zip(documents, has_file, strict=True)):
        if not filed:
            continue
        if d in last:
            previous[row] = last[d]
            following[last[d]] = row
        last[d] = row
    return previous, following
