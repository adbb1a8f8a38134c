"""The context-set items of a pack (§7.7, §7.8 classes 1-3): verified answers matching the task,
definitions whose term or alias occurs in it, and every instruction; all ``approved``."""

from __future__ import annotations

from context_service.domain.context_set.events import Definition, Instruction, VerifiedAnswer
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.library.matching import match_answers
from context_service.domain.pack.items import (
    APPROVED,
    DEFINITIONS,
    FRAMING_TOKENS,
    INSTRUCTIONS,
    VERIFIED_ANSWERS,
    Item,
    Source,
)
from context_service.domain.pack.model import TokenCount
from context_service.domain.pack.phrases import first_runs
from context_service.domain.pack.text import normalised
from context_service.domain.query.tokenizer import tokenize
from context_service.domain.score import ONE

ANSWER_THRESHOLD = ONE // 2  # word-match score at least 0.5


def answer_text(a: VerifiedAnswer) -> str:
    return f"Q: {a.question}\nA: {a.answer}"


def definition_text(d: Definition) -> str:
    also = f" (also {', '.join(d.aliases)})" if d.aliases else ""
    return f"{d.term}{also}: {d.definition}"


def set_source(s: ContextSetState) -> Source:
    return Source(kind="context_set", context_set_id=s.id, context_set_version=s.version)


def _item(s: ContextSetState, id_: str, cls: str, text: str, score: int,
          count: TokenCount) -> Item:
    return Item(id=f"set:{s.id}/{id_}", cls=cls, trust=APPROVED, text=text,
                tokens=count(text) + FRAMING_TOKENS, score=score, source=set_source(s))


def answer_item(s: ContextSetState, a: VerifiedAnswer, score: int, count: TokenCount) -> Item:
    return _item(s, f"answer/{a.id}", VERIFIED_ANSWERS, answer_text(a), score, count)


def definition_item(s: ContextSetState, d: Definition, count: TokenCount) -> Item:
    return _item(s, f"definition/{d.term}", DEFINITIONS, definition_text(d), ONE, count)


def instruction_item(s: ContextSetState, i: Instruction, count: TokenCount) -> Item:
    return _item(s, f"instruction/{i.id}", INSTRUCTIONS, i.text, ONE, count)


def verified_answers(s: ContextSetState, task: str, count: TokenCount) -> list[Item]:
    """Answers scoring at least 0.5 against the task, in match order (§9.2)."""
    return [answer_item(s, m.answer, m.score, count)
            for m in match_answers(task, [s]) if m.score >= ANSWER_THRESHOLD]


def definitions(s: ContextSetState, task: str, count: TokenCount) -> list[Item]:
    """Definitions occurring in the task, by first occurrence, then the term's normalised text.
    A definition occurs where its term or an alias first occurs; every phrase of the set is
    looked for in one pass (``first_runs``), not one search of the task each."""
    owners = [at for at, d in enumerate(s.definitions) for _ in range(1 + len(d.aliases))]
    phrases = [tokenize(x) for d in s.definitions for x in (d.term, *d.aliases)]
    first: dict[int, int] = {}  # a definition's index -> where its term or an alias occurs first
    for at, pos in zip(owners, first_runs(tokenize(task), phrases), strict=True):
        if 0 <= pos < first.get(at, pos + 1):
            first[at] = pos
    keyed = [((pos, normalised(s.definitions[at].term)), s.definitions[at])
             for at, pos in first.items()]
    keyed.sort(key=lambda pair: pair[0])
    return [definition_item(s, d, count) for _, d in keyed]


def instructions(s: ContextSetState, count: TokenCount) -> list[Item]:
    """Every instruction, in set order."""
    return [instruction_item(s, i, count) for i in s.instructions]
