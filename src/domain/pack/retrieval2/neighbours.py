"""Rules 4 and 5, evidence from a passage's document (§5.2: its ``file``, or the record alone).

Rule 4, turns. A record without a ``file`` has no neighbours; the others' previous and next
records are those of the same document in publication order. With ``s`` the scores after
feedback (rule 3), a record's score becomes:

- its own: ``s`` x (1 - 0.35) when its text holds a question mark, else ``s``: a question
  repeats the words of what it asks without holding the answer;
- plus what a neighbour lends beyond that own score: 0.5 x (s(previous) - own) or
  0.5 x (s(next) - own), whichever is higher, nothing when neither is positive; a previous
  record that asks a question lends 1.0 x instead of 0.5 x: the turn after a question is its
  answer, and an answer repeats little of the question's words;
- plus 0.3 x what the better of the records two places before and two after has beyond the
  score so far (nothing when neither has more): the answer often sits one turn further on.

Rule 5, the document prior: after rules 4 and 4b (``informative``), add 0.3 x the best score
among the records of the same document (a record alone in its document adds 0.3 x its own,
which changes no order among such records).

Each reads the scores of every record of a collection; plain-list forms of what the service
computes over arrays, operation for operation."""

from __future__ import annotations

from collections.abc import Sequence

NEIGHBOUR_WEIGHT = 0.5
ANSWER_WEIGHT = 1.0  # a previous record that asks a question lends this much instead
QUESTION_DISCOUNT = 0.35
SECOND_NEIGHBOUR_WEIGHT = 0.3
DOCUMENT_PRIOR_WEIGHT = 0.3
NONE = -1  # no neighbour


def asks(text: str) -> bool:
    """Whether a record's text asks a question (holds a question mark)."""
    return "?" in text


def with_neighbours(scores: Sequence[float], previous: Sequence[int],
                    following: Sequence[int], asking: Sequence[bool]) -> list[float]:
    """Rule 4 over one collection's scores, neighbours (rows, or NONE) and question flags."""
    def at(row: int) -> float:
        return scores[row] if row != NONE else 0.0

    out = []
    for s, p, n, q in zip(scores, previous, following, asking, strict=True):
        own = s * (1 - QUESTION_DISCOUNT) if q else s
        lend_back = (ANSWER_WEIGHT if p != NONE and asking[p] else NEIGHBOUR_WEIGHT) * (at(p) - own)
        lend_on = NEIGHBOUR_WEIGHT * (at(n) - own)
        near = own + max(max(lend_back, lend_on), 0.0)
        p2 = previous[p] if p != NONE else NONE
        n2 = following[n] if n != NONE else NONE
        out.append(near + SECOND_NEIGHBOUR_WEIGHT * max(max(at(p2), at(n2)) - near, 0.0))
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
