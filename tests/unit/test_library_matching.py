"""Word matching of the library routes (spec 9.2) and score formatting (spec 1.8): the worked
example, the stop-word rules, rounding ties to even, and, with Hypothesis, determinism and the
three orders over generated sets."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.context_set.events import Definition, VerifiedAnswer
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.library.matching import (
    EXACT,
    EXACT_ALIAS,
    EXACT_TERM,
    WORDS,
    lookup_definitions,
    match_answers,
    rank_sets,
)
from context_service.domain.library.words import (
    STOP_WORDS,
    dice,
    exact,
    normalised,
    word_set,
)
from context_service.domain.score import ONE, format_score, to_micros


def finance(**kw: object) -> ContextSetState:
    base: dict[str, object] = {
        "exists": True, "id": "finance", "version": 1, "name": "Finance",
        "collections": ("company-facts",),
        "verified_answers": (VerifiedAnswer(
            id="current-cfo", question="Who is our CFO?",
            answer="Priya Raman has been CFO since 1 July 2024.",
            citations=("company-facts/cfo-2024",)),)}
    base.update(kw)
    return ContextSetState(**base)  # type: ignore[arg-type]


# --- spec examples ----------------------------------------------------------------------------

def test_worked_example_of_verified_answers_match() -> None:
    [m] = match_answers("Who is the current CFO, and since when?", [finance()])
    assert (m.set_id, m.answer.id, m.match, m.score) == ("finance", "current-cfo", WORDS, 571429)
    assert format_score(m.score) == "0.571429"
    assert word_set("Who is the current CFO, and since when?") == {
        "who", "current", "cfo", "since", "when"}
    assert word_set("Who is our CFO?") == {"who", "cfo"}


@pytest.mark.parametrize(("micros", "text"), [
    (32002, "0.032002"), (500000, "0.5"), (ONE, "1"), (1, "0.000001"), (0, "0"),
    (571429, "0.571429"), (100000, "0.1"), (999999, "0.999999"), (1010000, "1.01"),
    (2 * ONE, "2"), (-250000, "-0.25")])
def test_scores_are_plain_decimals(micros: int, text: str) -> None:
    assert format_score(micros) == text


@pytest.mark.parametrize(("value", "micros"), [
    (Fraction(4, 7), 571429), (Fraction(2, 3), 666667), (Fraction(1, 3), 333333),
    (Fraction(1, 2_000_000), 0), (Fraction(3, 2_000_000), 2), (Fraction(5, 2_000_000), 2),
    (Fraction(7, 2_000_000), 4), (1, ONE), (0, 0), (0.5, 500000),
    (Fraction(32002, 10**6), 32002), (Fraction(64003, 2 * 10**6), 32002)])
def test_rounding_is_to_the_nearest_millionth_ties_to_even(value: Fraction | int | float,
                                                          micros: int) -> None:
    assert to_micros(value) == micros


@given(st.integers(-(10**12), 10**12))
def test_formatted_scores_read_back_exactly(micros: int) -> None:
    text = format_score(micros)
    assert "e" not in text.lower()
    assert Decimal(text) * 10**6 == micros
    if "." in text:
        assert not text.endswith("0")
    else:
        assert micros % 10**6 == 0


# --- words ------------------------------------------------------------------------------------

def test_stop_words_leave_the_score_but_not_exactness() -> None:
    assert word_set("the of and") == {"the", "of", "and"}  # nothing else: all distinct tokens
    assert word_set("What is THE revenue? the revenue!") == {"what", "revenue"}
    assert {"who", "what", "when", "where", "which", "why", "how"}.isdisjoint(STOP_WORDS)
    assert len(STOP_WORDS) == 61
    assert normalised("The  Revenue-Report, v2!") == "the revenue report v2"
    assert exact(normalised("the CFO"), normalised("The cfo?"))
    assert not exact(normalised("the CFO"), normalised("CFO"))
    assert not exact("", "")


def test_dice_of_word_sets() -> None:
    assert dice(frozenset(), frozenset({"a"})) == 0
    assert dice(frozenset({"a"}), frozenset()) == 0
    assert dice(frozenset({"a", "b"}), frozenset({"b", "c", "d"})) == 400000
    assert dice(frozenset({"x"}), frozenset({"x"})) == ONE


VOCAB = ("who", "what", "when", "cfo", "revenue", "arr", "churn", "the", "is", "of", "our",
         "annual", "recurring", "since", "office", "Zürich", "q3", "2024")
phrases = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=5).flatmap(
    lambda words: st.sampled_from((" ", "-", ", ", "  ")).map(lambda sep: sep.join(words))
).flatmap(lambda text: st.sampled_from((text, text.upper(), text.title(), text + "?")))
word_sets = st.frozensets(st.sampled_from(VOCAB), max_size=6)


@given(word_sets, word_sets)
def test_dice_is_symmetric_bounded_and_one_only_for_equal_sets(a: frozenset[str],
                                                                b: frozenset[str]) -> None:
    score = dice(a, b)
    assert score == dice(b, a)
    assert 0 <= score <= ONE
    assert (score == ONE) == (bool(a) and a == b)
    assert (score == 0) == (not a or not b or not (a & b))


# --- orders -----------------------------------------------------------------------------------

def definition_sets(draw: st.DrawFn) -> list[ContextSetState]:
    """Sets whose terms and aliases are distinct once normalised (as validation guarantees)."""
    sets = []
    for set_id in draw(st.lists(st.sampled_from(("a", "b", "c", "finance")), unique=True,
                                max_size=3)):
        used: set[str] = set()
        found = []
        for _ in range(draw(st.integers(0, 4))):
            names = [n for n in draw(st.lists(phrases, min_size=1, max_size=3))
                     if normalised(n) and normalised(n) not in used]
            if names:
                used.update(normalised(n) for n in names)
                found.append(Definition(term=names[0], definition="d", aliases=tuple(names[1:])))
        sets.append(ContextSetState(exists=True, id=set_id, name=set_id,
                                    definitions=tuple(found)))
    return sets


@st.composite
def lookups(draw: st.DrawFn) -> tuple[str, list[ContextSetState]]:
    return draw(phrases), definition_sets(draw)


@given(lookups(), st.randoms())
def test_definitions_lookup_order_and_determinism(
        case: tuple[str, list[ContextSetState]], rng: object) -> None:
    term, sets = case
    found = lookup_definitions(term, sets)
    shuffled = list(sets)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert lookup_definitions(term, shuffled) == found
    rank = {EXACT_TERM: 0, EXACT_ALIAS: 1, WORDS: 2}
    keys = [(rank[m.match], -m.score, normalised(m.definition.term), m.set_id) for m in found]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    query = normalised(term)
    expected = 0
    for s in sets:
        for d in s.definitions:
            best = max(dice(word_set(term), word_set(t)) for t in (d.term, *d.aliases))
            is_term = exact(query, normalised(d.term))
            is_alias = any(exact(query, normalised(a)) for a in d.aliases)
            expected += is_term or is_alias or best > 0
    assert len(found) == expected
    for m in found:
        assert m.score > 0
        assert (m.score == ONE) if m.match != WORDS else (0 < m.score <= ONE)
        assert (m.match == EXACT_TERM) == exact(query, normalised(m.definition.term))


def test_definitions_exact_term_then_alias_then_words() -> None:
    sets = [
        ContextSetState(exists=True, id="b", definitions=(
            Definition(term="Annual recurring revenue", definition="d"),)),
        ContextSetState(exists=True, id="a", definitions=(
            Definition(term="ARR", definition="d", aliases=("annual-recurring revenue",)),
            Definition(term="Revenue", definition="d"))),
        ContextSetState(exists=True, id="c", definitions=(
            Definition(term="Recurring revenue", definition="d"),
            Definition(term="Annual churn", definition="d", aliases=("yearly churn",)))),
    ]
    found = lookup_definitions("annual recurring REVENUE", sets)
    assert [(m.set_id, m.definition.term, m.match, format_score(m.score)) for m in found] == [
        ("b", "Annual recurring revenue", EXACT_TERM, "1"),
        ("a", "ARR", EXACT_ALIAS, "1"),
        ("c", "Recurring revenue", WORDS, "0.8"),
        ("a", "Revenue", WORDS, "0.5"),
        ("c", "Annual churn", WORDS, "0.4"),
    ]


@st.composite
def questions(draw: st.DrawFn) -> tuple[str, list[ContextSetState]]:
    sets = []
    for set_id in draw(st.lists(st.sampled_from(("a", "b", "c")), unique=True, max_size=3)):
        ids = draw(st.lists(st.sampled_from(("q1", "q2", "q3", "x")), unique=True, max_size=4))
        sets.append(ContextSetState(exists=True, id=set_id, verified_answers=tuple(
            VerifiedAnswer(id=i, question=draw(phrases), answer="a") for i in ids)))
    return draw(phrases), sets


@given(questions(), st.randoms())
def test_verified_answers_match_order_and_determinism(
        case: tuple[str, list[ContextSetState]], rng: object) -> None:
    question, sets = case
    found = match_answers(question, sets)
    shuffled = list(sets)
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    assert match_answers(question, shuffled) == found
    keys = [(m.match != EXACT, -m.score, m.set_id, m.answer.id) for m in found]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    for s in sets:
        for a in s.verified_answers:
            is_exact = exact(normalised(question), normalised(a.question))
            score = dice(word_set(question), word_set(a.question))
            listed = [m for m in found if (m.set_id, m.answer.id) == (s.id, a.id)]
            if is_exact:
                assert [(m.match, m.score) for m in listed] == [(EXACT, ONE)]
            elif score:
                assert [(m.match, m.score) for m in listed] == [(WORDS, score)]
            else:
                assert listed == []


@given(phrases, st.lists(st.tuples(st.sampled_from(("a", "b", "c", "d")), phrases, phrases),
                         unique_by=lambda t: t[0], max_size=4), st.randoms())
def test_context_sets_rank_by_score_then_id(query: str, specs: list[tuple[str, str, str]],
                                            rng: object) -> None:
    sets = [ContextSetState(exists=True, id=i, name=n, description=d) for i, n, d in specs]
    found = rank_sets(query, sets)
    rng.shuffle(sets)  # type: ignore[attr-defined]
    assert rank_sets(query, sets) == found
    keys = [(-m.score, m.state.id) for m in found]
    assert keys == sorted(keys)
    assert all(m.score > 0 for m in found)
    assert {m.state.id for m in found} == {
        i for i, n, d in specs if dice(word_set(query), word_set(f"{n} {d}")) > 0}


def test_context_sets_rank_example() -> None:
    sets = [ContextSetState(exists=True, id="hr", name="People", description="Headcount"),
            ContextSetState(exists=True, id="finance", name="Finance",
                            description="Revenue and CFO answers"),
            ContextSetState(exists=True, id="board", name="Board", description="CFO reports")]
    found = rank_sets("Who is the CFO?", sets)
    assert [(m.state.id, format_score(m.score)) for m in found] == [
        ("board", "0.4"), ("finance", "0.333333")]
    assert rank_sets("the", sets) == []
