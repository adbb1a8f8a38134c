"""A pack's definitions cost what the task and the set's phrases weigh, not their product.

Every pack over a context set looks for each definition's term and aliases in the task. The
search compared a slice of the task's tokens at every position, so each phrase cost the task's
length times its own: a set within the body limit (250 definitions of 20 aliases) and a
4,000-character task cost 1.7 s of CPU per pack, under the interpreter's lock and outside the
pack's deadline. The work is now measured against reading the input once (tokenizing the task
and every phrase, which any search must do): a small multiple of it, at any size."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from context_service.domain.context_set.events import Definition
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack import set_items
from context_service.domain.query.tokenizer import tokenize
from tests.support.cpu_cost import least_cpu

DEFINITIONS, ALIASES = 250, 20  # 5,250 phrases of at most 200 characters: within 1 MiB
TASK_WORDS = 1999  # 3,997 characters, the task's limit being 4,000



def same_length(definitions: int, scale: int = 4) -> tuple[ContextSetState, str]:
    """Phrases of ``24 * scale`` words matching the task at every position up to their last
    word; a task of ``500 * scale`` words (at scale 4, 96 words and the task's limit)."""
    phrase = " ".join(["x"] * (24 * scale - 1) + ["y"])
    return ContextSetState(exists=True, id="big", version=1, definitions=tuple(
        Definition(term=f"{phrase} {i}", definition="d",
                   aliases=tuple(f"{phrase} {i} {j}" for j in range(ALIASES)))
        for i in range(definitions))), " ".join(["x"] * (500 * scale - 1))


def every_length(definitions: int) -> tuple[ContextSetState, str]:
    """Phrases of 2 to 97 words, every word of them in the task, none of them a run of it."""
    phrases = []
    for k in range(definitions * (1 + ALIASES)):
        words = ["x"] * (2 + k % 96)
        words[k // 96 % len(words)] = "y"
        phrases.append(" ".join(words) + " z" * (k % 2))
    return ContextSetState(exists=True, id="big", version=1, definitions=tuple(
        Definition(term=phrases[i * (1 + ALIASES)], definition="d",
                   aliases=tuple(phrases[i * (1 + ALIASES) + 1:(i + 1) * (1 + ALIASES)]))
        for i in range(definitions))), " ".join(["x"] * TASK_WORDS) + " z"


def reading(state: ContextSetState, task: str) -> Callable[[], object]:
    """Tokenizing the task and every term and alias once: what any search must spend."""
    texts = [x for d in state.definitions for x in (d.term, *d.aliases)]
    return lambda: ([tokenize(x) for x in texts], tokenize(task))


@pytest.mark.parametrize("hostile", [same_length, every_length])
def test_definitions_cost_a_small_multiple_of_reading_the_input(
        hostile: Callable[[int], tuple[ContextSetState, str]]) -> None:
    state, task = hostile(DEFINITIONS)
    assert set_items.definitions(state, task, len) == []  # no phrase is a run of the task
    ratio = least_cpu(lambda: set_items.definitions(state, task, len)) / least_cpu(
        reading(state, task))
    # about 3 to 6 now; the slice compared at every position made it 200 to 350
    assert ratio < 20, f"the definitions cost {ratio:.0f} times reading the input"


def test_four_times_the_task_and_the_phrases_cost_about_four_times_as_much() -> None:
    small, large = same_length(DEFINITIONS, scale=1), same_length(DEFINITIONS, scale=4)
    ratio = least_cpu(lambda: set_items.definitions(*large, len)) / least_cpu(
        lambda: set_items.definitions(*small, len))
    # the task's length times the phrases' made it about 16
    assert ratio < 8, f"four times the sizes cost {ratio:.1f} times as much"


def naive_position(phrase: list[str], tokens: list[str]) -> int:
    """The first index where ``phrase`` is a run of ``tokens``, the way the contract says it."""
    n = len(phrase)
    if not n:
        return -1
    return next((i for i in range(len(tokens) - n + 1) if tokens[i:i + n] == phrase), -1)


def naive_order(state: ContextSetState, task: str) -> list[str]:
    tokens = tokenize(task)
    keyed = []
    for d in state.definitions:
        found = [i for i in (naive_position(tokenize(x), tokens) for x in (d.term, *d.aliases))
                 if i >= 0]
        if found:
            keyed.append(((min(found), " ".join(tokenize(d.term))), d.term))
    return [f"set:s/definition/{term}" for _, term in sorted(keyed)]


def test_a_term_is_found_where_it_is_a_run_of_whole_tokens() -> None:
    rng = random.Random(36)
    vocabulary = ["a", "b", "ab", "ba", "\u00e9", "x1"]
    for _ in range(1000):
        words = [rng.choice(vocabulary) for _ in range(rng.randrange(0, 12))]
        task = " ".join(words) + "?"
        terms = []
        for k in range(3):
            phrase = [rng.choice(vocabulary) for _ in range(rng.randrange(1, 4))]
            if words and rng.random() < 0.5:  # often a run that is there
                start = rng.randrange(len(words))
                phrase = words[start:start + rng.randrange(1, 4)]
            terms.append(f"{', '.join(phrase)} {'#' * k}")
        state = ContextSetState(exists=True, id="s", version=1, definitions=tuple(
            Definition(term=t, definition="d") for t in terms))
        found = [i.id for i in set_items.definitions(state, task, len)]
        assert found == naive_order(state, task), (terms, task)
    # a token is never matched by a part of another
    parts = ContextSetState(exists=True, id="s", version=1, definitions=(
        Definition(term="b", definition="d"), Definition(term="ab ba", definition="d")))
    assert set_items.definitions(parts, "xab bax", len) == []
    assert [i.id for i in set_items.definitions(parts, "CFO: ab, ba!", len)] == [
        "set:s/definition/ab ba"]


def test_a_pack_orders_the_definitions_as_before() -> None:
    state = ContextSetState(exists=True, id="s", version=1, definitions=(
        Definition(term="Chief Financial Officer", definition="d", aliases=("CFO",)),
        Definition(term="board", definition="d"),
        Definition(term="missing term", definition="d"),
    ))
    items = set_items.definitions(state, "Who told the board the CFO left?", len)
    assert [i.id for i in items] == ["set:s/definition/board",
                                     "set:s/definition/Chief Financial Officer"]


def test_windows_sharing_a_hash_still_answer_the_first_run(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from context_service.domain.pack import phrases

    monkeypatch.setattr(phrases, "hash", lambda data: len(data), raising=False)  # all collide
    rng = random.Random(41)
    for _ in range(300):
        tokens = [rng.choice("abc") for _ in range(rng.randrange(0, 10))]
        wanted = [[rng.choice("abc") for _ in range(rng.randrange(0, 4))] for _ in range(5)]
        assert phrases.first_runs(tokens, wanted) == [naive_position(p, tokens) for p in wanted]
