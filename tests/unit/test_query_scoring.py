"""Scoring, ordering and the index layout (spec 5.2), including the spec's worked example."""

from __future__ import annotations

from context_service.domain.context.events import QueryRecord
from context_service.domain.query.index import layout, numbers, weights
from context_service.domain.query.scoring import order_key, query_terms, score, weighted_terms


def test_worked_example() -> None:
    terms = query_terms("release schedule")
    a = weighted_terms("Release schedule", (), "Friday release schedule")
    b = weighted_terms("Release", (), "release schedule")
    c = weighted_terms("Unrelated", (), "nothing here")
    assert (score(a, terms), score(b, terms), score(c, terms)) == (8, 5, 0)


def test_weights_per_field() -> None:
    weights = weighted_terms("Term term", ("term", "other term"), "term, TERM! term.")
    assert weights == {"term": 3 * 2 + 2 * 2 + 3, "other": 2}


def test_keywords_are_joined_with_spaces() -> None:
    assert weighted_terms("", ("a-b", "c"), "x") == {"a": 2, "b": 2, "c": 2, "x": 1}
    assert weighted_terms("", ("ab", "c"), "x") != weighted_terms("", ("abc",), "x")


def test_repeated_query_terms_count_each_time() -> None:
    assert query_terms("release release schedule") == {"release": 2, "schedule": 1}
    weights = weighted_terms("", (), "release schedule")
    assert score(weights, query_terms("release release schedule")) == 3
    assert score(weights, query_terms("Release, RELEASE")) == 2


def test_no_query_terms_scores_one() -> None:
    assert score({}, {}) == 1
    assert score(weighted_terms("", (), "x"), query_terms("?!")) == 1


def test_order_key_is_score_desc_then_context_then_id_by_code_point() -> None:
    keys = [order_key(1, "b", "a"), order_key(2, "z", "z"), order_key(1, "a", "b"),
            order_key(1, "a", "B"), order_key(1, "a", "\u00e9"), order_key(1, "a", "a10"),
            order_key(1, "a", "a9")]
    assert sorted(keys) == [(-2, "z", "z"), (-1, "a", "B"), (-1, "a", "a10"), (-1, "a", "a9"),
                            (-1, "a", "b"), (-1, "a", "\u00e9"), (-1, "b", "a")]


def _record(id_: str, text: str, title: str = "") -> QueryRecord:
    return QueryRecord(id=id_, context="c", type="memory", revision="r", text=text, title=title)


def test_layout_numbers_records_by_id_and_keeps_publish_order_of_equal_ids() -> None:
    first, second = _record("x", "one"), _record("x", "two")
    built = layout([_record("b", "beta alpha"), first, _record("a", "alpha", "Alpha"), second])
    assert [r.id for r in built.records] == ["a", "b", "x", "x"]
    assert built.records[2] is first and built.records[3] is second
    assert built.postings["alpha"] == [0, 4, 1, 1]
    assert (numbers(built.postings["alpha"]), weights(built.postings["alpha"])) == ([0, 1], [4, 1])
    assert built.postings["two"] == [3, 1]


def test_layout_of_nothing() -> None:
    built = layout([])
    assert built.records == [] and built.postings == {}
