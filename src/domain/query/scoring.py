"""Scoring and order of query results (spec 5.2). The rules live in ``context_service.lexical``,
which the service and ``contextctl``'s local store share; this module keeps the domain's import
path."""

from __future__ import annotations

from context_service.lexical import (
    KEYWORD_WEIGHT,
    TEXT_WEIGHT,
    TITLE_WEIGHT,
    order_key,
    query_terms,
    score,
    weighted_terms,
)

__all__ = ["KEYWORD_WEIGHT", "TEXT_WEIGHT", "TITLE_WEIGHT", "order_key", "query_terms", "score",
           "weighted_terms"]
