"""``first_runs`` finds each phrase where a slice-by-slice search found it, and a set's
definitions come out of a task as they did before it: overlapping phrases, case folded as the
tokenizer folds it, phrases longer than the task, and hashes that collide (a collision may
cost a look, never a match that is not there)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from context_service.domain.context_set.events import Definition
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack import phrases, set_items
from context_service.domain.pack.text import normalised
from context_service.domain.query.tokenizer import tokenize

# few words, so that phrases overlap and repeat; cased and non-ASCII forms of the same words
WORDS = ("a", "b", "ab", "A", "STRASSE", "straße", "ǅemal", "ǆemal", "ΣΊΣΥΦΟΣ", "σίσυφος",
         "ﬁle", "file", "İ")


def occurs_in(phrase: Sequence[str], tokens: Sequence[str]) -> int:
    """The search ``first_runs`` replaced: every slice compared."""
    n = len(phrase)
    if not n:
        return -1
    return next((i for i in range(len(tokens) - n + 1) if list(tokens[i:i + n]) == list(phrase)),
                -1)


def old_definitions(s: ContextSetState, task: str) -> list[str]:
    """The order a pack gave before: each definition's first term or alias, then its term."""
    task_tokens = tokenize(task)
    keyed = []
    for d in s.definitions:
        found = [i for i in (occurs_in(tokenize(x), task_tokens) for x in (d.term, *d.aliases))
                 if i >= 0]
        if found:
            keyed.append(((min(found), normalised(d.term)), d))
    keyed.sort(key=lambda pair: pair[0])
    return [f"set:{s.id}/definition/{d.term}" for _, d in keyed]


def _text(rng: random.Random, most: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randrange(most + 1)))


COLLIDING: dict[str, Callable[[bytes], int]] = {
    "all-one": lambda _: 7,
    "by-length": len,
    "by-last-byte": lambda b: b[-1] % 3 if b else 0,
}


@pytest.mark.parametrize("collide", [None, *sorted(COLLIDING)])
def test_every_phrase_is_found_where_a_slice_search_finds_it(
        monkeypatch: pytest.MonkeyPatch, collide: str | None) -> None:
    if collide is not None:  # the windows' hashes made to collide, as far as one can
        monkeypatch.setattr(phrases, "hash", COLLIDING[collide], raising=False)
    rng = random.Random(collide)
    for _ in range(300):
        tokens = tokenize(_text(rng, 25))
        wanted = [tokenize(_text(rng, 5)) for _ in range(rng.randrange(12))]
        wanted += [tokens[i:j] for i, j in ((rng.randrange(len(tokens) + 1),
                                             rng.randrange(len(tokens) + 2)),) * 3]
        wanted.append([*tokens, "a"])  # longer than the text
        assert phrases.first_runs(tokens, wanted) == [occurs_in(p, tokens) for p in wanted], (
            tokens, wanted)


@pytest.mark.parametrize("collide", [None, "all-one"])
def test_a_sets_definitions_come_out_of_a_task_as_before(
        monkeypatch: pytest.MonkeyPatch, collide: str | None) -> None:
    if collide is not None:
        monkeypatch.setattr(phrases, "hash", COLLIDING[collide], raising=False)
    rng = random.Random(5)
    for _ in range(300):
        task = _text(rng, 20)
        terms = {_text(rng, 3) for _ in range(rng.randrange(8))}
        state = ContextSetState(exists=True, id="s", version=1, definitions=tuple(
            Definition(term=t, definition="d",
                       aliases=tuple(_text(rng, 3) for _ in range(rng.randrange(3))))
            for t in sorted(terms)))
        found = [item.id for item in set_items.definitions(state, task, len)]
        assert found == old_definitions(state, task), (task, state.definitions)


def test_a_phrase_is_never_matched_by_a_window_with_its_hash_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(phrases, "hash", COLLIDING["all-one"], raising=False)
    assert phrases.first_runs(["x", "y", "z"], [["y", "x"], ["z"], ["x", "z"], ["y", "z"]]) == [
        -1, 2, -1, 1]
