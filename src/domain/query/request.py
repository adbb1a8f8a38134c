"""The checks of a query request (spec 2.4) and the plan they produce for the search.

Runs after context resolution and authorization; the first failure answers, with the domain
prefix ``invalid context resource: ``.
"""

from __future__ import annotations

import msgspec

from context_service.domain.errors import ContextInvalidError
from context_service.domain.query.cursor import decode_cursor, fingerprint
from context_service.domain.query.index import term_key
from context_service.domain.query.scoring import query_terms

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


class QueryInput(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded query body; absent fields are empty (``limit`` 0 means the default)."""

    contexts: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    source_contexts: tuple[str, ...] = ()
    revisions: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    query: str = ""
    limit: int = 0
    cursor: str = ""

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.contexts, self.types, self.source_contexts, self.revisions,
                           self.ids, self.query)


class QueryPlan(msgspec.Struct, frozen=True):
    """What the search needs: distinct terms (as the index keys them, ``term_key``) with their
    counts, the page and its fingerprint."""

    terms: tuple[tuple[str, int], ...]
    offset: int
    limit: int
    fingerprint: str


def plan(request: QueryInput) -> QueryPlan:
    if not request.query.strip() and not request.ids:
        raise ContextInvalidError("query or ids is required")
    limit = request.limit or DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise ContextInvalidError("limit must be between 1 and 100")
    key = request.fingerprint
    offset = 0
    if request.cursor:
        decoded = decode_cursor(request.cursor, key)
        if decoded is None:
            raise ContextInvalidError("invalid query cursor")
        offset = decoded
    terms = tuple(sorted((term_key(t), n) for t, n in query_terms(request.query).items()))
    return QueryPlan(terms, offset, limit, key)


def beyond_result_set() -> ContextInvalidError:
    return ContextInvalidError("cursor is beyond the result set")
