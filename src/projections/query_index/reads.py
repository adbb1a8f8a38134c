"""Read port of the query index: what the query route asks, implemented over PostgreSQL.

The route resolves and authorizes contexts first (spec 5.1); the port only ever sees the names
of contexts the caller may search, in name order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from context_service.domain.context.events import QueryRecord


@dataclass(frozen=True, slots=True)
class Search:
    namespace: str
    contexts: tuple[str, ...]  # authorized memory/knowledge contexts, sorted by name
    terms: tuple[tuple[str, int], ...]  # distinct term keys and counts; () scores 1
    types: tuple[str, ...] = ()
    source_contexts: tuple[str, ...] = ()
    revisions: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    offset: int = 0
    limit: int = 20


@dataclass(frozen=True, slots=True)
class Hit:
    score: int
    record: QueryRecord


@dataclass(frozen=True, slots=True)
class SearchPage:
    hits: tuple[Hit, ...]
    more: bool  # results remain after this page
    beyond: bool  # the offset lies past the end of the results
    unavailable: tuple[str, ...]  # contexts whose index does not match their revision


class QueryReads(Protocol):
    def search(self, search: Search) -> SearchPage: ...
