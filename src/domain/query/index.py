"""The layout of one published index as the search tables hold it (spec 5.2, 6.5).

Records are numbered by id in code-point order (publish order among equal ids), so within a
context the record number alone gives the spec's tie-break. Each term maps to its postings: the
numbers of the records containing it, ascending, each followed by the term's weighted frequency
in that record (one flat list, which keeps the inversion cheap for large indexes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from context_service.domain.context.events import QueryRecord
from context_service.domain.query.scoring import weighted_terms


@dataclass(frozen=True, slots=True)
class IndexLayout:
    records: list[QueryRecord]  # position = record number
    postings: dict[str, list[int]]  # term -> [number, weight, number, weight, ...]
    max_weight: int  # the largest weighted frequency of any term in any record


def layout(records: Sequence[QueryRecord]) -> IndexLayout:
    ordered = sorted(records, key=lambda r: r.id)  # stable: equal ids keep publish order
    postings: dict[str, list[int]] = {}
    top = 0
    for number, record in enumerate(ordered):
        terms = weighted_terms(record.title, record.keywords, record.text)
        top = max(top, max(terms.values(), default=0))
        for term, weight in terms.items():
            posting = postings.get(term)
            if posting is None:
                postings[term] = [number, weight]
            else:
                posting.append(number)
                posting.append(weight)
    return IndexLayout(ordered, postings, top)


def numbers(posting: list[int]) -> list[int]:
    return posting[0::2]


def weights(posting: list[int]) -> list[int]:
    return posting[1::2]
