"""The layout of one published index as the search tables hold it (spec 5.2, 6.5).

Records are numbered by id in code-point order (publish order among equal ids), so within a
context the record number alone gives the spec's tie-break. Each term maps to its postings: the
numbers of the records containing it, ascending, each followed by the term's weighted frequency
in that record (one flat list, which keeps the inversion cheap for large indexes).

A term is keyed by itself, or by ``_`` and its SHA-256 when it is longer than
``MAX_TERM_BYTES`` (a token has no length limit, a search-table key has: a record holding a
blob-like run of letters would otherwise be an index no table can store). The query's terms go
through the same ``term_key``; no token holds ``_``, so a key never names another token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from context_service.domain.context.events import QueryRecord
from context_service.domain.query.scoring import weighted_terms

MAX_TERM_BYTES = 2000  # UTF-8 bytes of a term kept as itself (a table key holds about 2.7 kB)
_SHORT = MAX_TERM_BYTES // 4  # characters that cannot exceed it (at most 4 bytes each)


def term_key(term: str) -> str:
    """How the search tables name ``term``."""
    if len(term) <= _SHORT:
        return term
    encoded = term.encode()
    if len(encoded) <= MAX_TERM_BYTES:
        return term
    return "_" + hashlib.sha256(encoded).hexdigest()


@dataclass(frozen=True, slots=True)
class IndexLayout:
    records: list[QueryRecord]  # position = record number
    postings: dict[str, list[int]]  # term key -> [number, weight, number, weight, ...]
    max_weight: int  # the largest weighted frequency of any term in any record


def layout(records: Sequence[QueryRecord]) -> IndexLayout:
    ordered = sorted(records, key=lambda r: r.id)  # stable: equal ids keep publish order
    postings: dict[str, list[int]] = {}
    top = 0
    for number, record in enumerate(ordered):
        terms = weighted_terms(record.title, record.keywords, record.text)
        top = max(top, max(terms.values(), default=0))
        for term, weight in terms.items():
            key = term if len(term) <= _SHORT else term_key(term)
            posting = postings.get(key)
            if posting is None:
                postings[key] = [number, weight]
            else:
                posting.append(number)
                posting.append(weight)
    return IndexLayout(ordered, postings, top)


def numbers(posting: list[int]) -> list[int]:
    return posting[0::2]


def weights(posting: list[int]) -> list[int]:
    return posting[1::2]
