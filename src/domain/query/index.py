"""The layout of one published index as the search tables hold it (spec 5.2, 6.5).

Records are numbered by id in code-point order (publish order among equal ids), so within a
context the record number alone gives the spec's tie-break. Each term maps to the numbers of the
records containing it and its weighted frequency there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from src.domain.context.events import QueryRecord
from src.domain.query.scoring import weighted_terms


@dataclass(frozen=True, slots=True)
class Posting:
    """Record numbers (ascending) and the term's weighted frequency in each."""

    ords: list[int] = field(default_factory=list)
    weights: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class IndexLayout:
    records: list[QueryRecord]  # position = record number
    postings: dict[str, Posting]


def layout(records: Sequence[QueryRecord]) -> IndexLayout:
    ordered = sorted(records, key=lambda r: r.id)  # stable: equal ids keep publish order
    postings: dict[str, Posting] = {}
    for number, record in enumerate(ordered):
        for term, weight in weighted_terms(record.title, record.keywords, record.text).items():
            posting = postings.get(term)
            if posting is None:
                postings[term] = Posting([number], [weight])
            else:
                posting.ords.append(number)
                posting.weights.append(weight)
    return IndexLayout(ordered, postings)
