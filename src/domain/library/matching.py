"""The three orders of the library routes (spec 9.1, 9.2), as pure functions over the sets.

Each returns the candidates that score above 0, in the documented order; the caller cuts the
list at its ``limit``. Every order ends in a key that is unique within its candidates, so the
answer never depends on the order the sets were read in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from context_service.domain.context_set.events import Definition, VerifiedAnswer
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.library.words import dice, exact, normalised, word_set
from context_service.domain.score import ONE

EXACT_TERM, EXACT_ALIAS, WORDS, EXACT = "exact_term", "exact_alias", "words", "exact"
_DEFINITION_RANK = {EXACT_TERM: 0, EXACT_ALIAS: 1, WORDS: 2}


@dataclass(frozen=True, slots=True)
class DefinitionMatch:
    set_id: str
    definition: Definition
    match: str
    score: int  # millionths


@dataclass(frozen=True, slots=True)
class AnswerMatch:
    set_id: str
    answer: VerifiedAnswer
    match: str
    score: int


@dataclass(frozen=True, slots=True)
class SetMatch:
    state: ContextSetState
    score: int


def lookup_definitions(term: str, sets: Iterable[ContextSetState]) -> list[DefinitionMatch]:
    """Exact term, then exact alias, then words; score descending, then the term's normalised
    text, then the set id."""
    query, words = normalised(term), word_set(term)
    found: list[tuple[tuple[int, int, str, str], DefinitionMatch]] = []
    for state in sets:
        for d in state.definitions:
            match = _definition_match(query, words, d)
            if match is None:
                continue
            kind, score = match
            key = (_DEFINITION_RANK[kind], -score, normalised(d.term), state.id)
            found.append((key, DefinitionMatch(state.id, d, kind, score)))
    return [m for _, m in sorted(found, key=lambda pair: pair[0])]


def _definition_match(query: str, words: frozenset[str],
                      d: Definition) -> tuple[str, int] | None:
    if exact(query, normalised(d.term)):
        return EXACT_TERM, ONE
    if any(exact(query, normalised(alias)) for alias in d.aliases):
        return EXACT_ALIAS, ONE
    best = max(dice(words, word_set(text)) for text in (d.term, *d.aliases))
    return (WORDS, best) if best > 0 else None


def match_answers(question: str, sets: Iterable[ContextSetState]) -> list[AnswerMatch]:
    """Exact questions first, then score descending, then set id, then answer id."""
    query, words = normalised(question), word_set(question)
    found: list[tuple[tuple[int, int, str, str], AnswerMatch]] = []
    for state in sets:
        for a in state.verified_answers:
            if exact(query, normalised(a.question)):
                kind, score = EXACT, ONE
            else:
                kind, score = WORDS, dice(words, word_set(a.question))
                if score == 0:
                    continue
            key = (0 if kind == EXACT else 1, -score, state.id, a.id)
            found.append((key, AnswerMatch(state.id, a, kind, score)))
    return [m for _, m in sorted(found, key=lambda pair: pair[0])]


def rank_sets(query: str, sets: Iterable[ContextSetState]) -> list[SetMatch]:
    """Sets scored against ``name + " " + description``: score descending, then id."""
    words = word_set(query)
    found = [SetMatch(s, dice(words, word_set(f"{s.name} {s.description}"))) for s in sets]
    return sorted((m for m in found if m.score > 0), key=lambda m: (-m.score, m.state.id))
