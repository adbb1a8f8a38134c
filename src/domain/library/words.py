"""Deterministic word matching of the library routes (spec 9.2) and normalised text (spec 5.5).

Tokens come from the query tokenizer. Stop words are left out when scoring, never when deciding
whether two texts are the same (exactness uses the normalised text, every token kept).
"""

from __future__ import annotations

from fractions import Fraction

from context_service.domain.query.tokenizer import tokenize
from context_service.domain.score import to_micros

STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
    "does", "for", "from", "had", "has", "have", "he", "her", "his", "i", "if", "in", "into",
    "is", "it", "its", "me", "my", "no", "not", "of", "on", "or", "our", "she", "so", "than",
    "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "to", "us",
    "was", "we", "were", "will", "with", "would", "you", "your",
))


def normalised(text: str) -> str:
    """The tokens of ``text`` joined with single spaces (spec 5.5)."""
    return " ".join(tokenize(text))


def word_set(text: str) -> frozenset[str]:
    """Distinct tokens without stop words; all distinct tokens when only stop words remain."""
    tokens = frozenset(tokenize(text))
    return (tokens - STOP_WORDS) or tokens


def dice(query: frozenset[str], candidate: frozenset[str]) -> int:
    """2|Q n C| / (|Q| + |C|) in millionths, rounded as written; 0 when either set is empty."""
    if not query or not candidate:
        return 0
    return to_micros(Fraction(2 * len(query & candidate), len(query) + len(candidate)))


def exact(normalised_query: str, normalised_candidate: str) -> bool:
    """Both normalised texts are equal and not empty."""
    return bool(normalised_query) and normalised_query == normalised_candidate
