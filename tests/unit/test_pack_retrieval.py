"""Retrieval of packs (agent-context-api §7.5): BM25 and the lexical list with the worked
example's figures, the vector list, reciprocal rank fusion, tiers, and requirement lists."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionCorpus, Scored
from context_service.domain.pack.ranking import ranked
from context_service.domain.pack.records import Judge
from context_service.domain.pack.reference import ReferenceRetrieval, bm25
from tests.unit import pack_cfo as ex

T = datetime(2025, 1, 1, tzinfo=UTC)
WORDS = ("cfo", "acme", "board", "lisbon", "office", "report", "budget", "x1")


def test_bm25_of_the_worked_example() -> None:
    scores = bm25(ex.TASK, ex.corpus())
    assert math.isclose(math.log(1 + 2.5 / 5.5), 0.374693, abs_tol=5e-7)
    assert {ref.partition("/")[2]: round(s, 6) for ref, s in scores.items()} == {
        "cfo-2021": 0.606664, "cfo-2024": 0.594253, "cfo-2025": 0.594253,
        "news-2024-07-a": 0.383166, "org-chart-finance": 0.363962}


def test_the_lexical_list_breaks_ties_by_record_id() -> None:
    got = ReferenceRetrieval().lexical(ex.TASK, ex.corpus(), None)
    assert [(s.record_id, s.score) for s in got] == [
        ("cfo-2021", 0.606664), ("cfo-2024", 0.594253), ("cfo-2025", 0.594253),
        ("news-2024-07-a", 0.383166), ("org-chart-finance", 0.363962)]


def test_the_vector_list_keeps_cosines_of_at_least_a_quarter() -> None:
    got = ex.retrieval().vector(ex.TASK, ex.corpus(), None)
    assert [s.record_id for s in got] == ["cfo-2021", "cfo-2025", "cfo-2024",
                                          "org-chart-finance", "news-2024-07-a"]
    near = ReferenceRetrieval({"q": {"company-facts/canteen": 0.2499996,
                                     "company-facts/cfo-2021": 0.2499994}})
    assert near.vector("q", ex.corpus(), None) == [Scored("company-facts", "canteen", 0.25)]


def test_eligible_documents_restrict_the_lists_but_not_the_statistics() -> None:
    only = frozenset({"company-facts/press/2024-06-cfo.md"})
    got = ReferenceRetrieval().lexical(ex.TASK, ex.corpus(), only)
    assert got == [Scored("company-facts", "cfo-2024", 0.594253)]
    assert ex.retrieval().vector(ex.TASK, ex.corpus(), only) == [
        Scored("company-facts", "cfo-2024", 0.48)]


def test_fusion_and_tiers_give_the_task_list_of_the_example() -> None:
    corpus, r = ex.corpus(), ex.retrieval()
    task = ranked(corpus, Judge(corpus, T), r.lexical(ex.TASK, corpus, None),
                  r.vector(ex.TASK, corpus, None))
    assert [(c.passage.record.id, c.tier, c.score) for c in task] == [
        ("cfo-2024", 0, 32002), ("news-2024-07-a", 0, 31010),
        ("org-chart-finance", 0, 31010), ("cfo-2021", 1, 32787), ("cfo-2025", 1, 32002)]


def test_lexical_mode_scores_are_bm25() -> None:
    corpus = ex.corpus()
    task = ranked(corpus, Judge(corpus, T),
                  ReferenceRetrieval().lexical(ex.TASK, corpus, None), None)
    assert [(c.passage.record.id, c.score) for c in task][:2] == [("cfo-2024", 594253),
                                                                 ("news-2024-07-a", 383166)]


def test_a_requirement_list_holds_only_records_sharing_a_token() -> None:
    corpus = ex.corpus()
    lexical = ReferenceRetrieval().lexical("lunch", corpus, None)
    vector = [Scored("company-facts", "cfo-2024", 0.9), Scored("company-facts", "canteen", 0.3)]
    got = ranked(corpus, Judge(corpus, T), lexical, vector, "lunch")
    assert [c.passage.record.id for c in got] == ["canteen"]
    assert ranked(corpus, Judge(corpus, T), [], vector, "nothing shared") == []


records = st.lists(st.tuples(st.lists(st.sampled_from(WORDS), max_size=6),
                             st.lists(st.sampled_from(WORDS), max_size=2),
                             st.lists(st.sampled_from(WORDS), min_size=1, max_size=12)),
                   min_size=1, max_size=12)


@given(records, st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
def test_bm25_is_positive_exactly_for_records_sharing_a_query_token(
        rows: list[tuple[list[str], list[str], list[str]]], query: list[str]) -> None:
    recs = [QueryRecord(id=f"r{i}", context="c", type="memory", revision="1",
                        title=" ".join(t), keywords=tuple(k), text=" ".join(x))
            for i, (t, k, x) in enumerate(rows)]
    corpus = {"c": CollectionCorpus("c", "1", 1, recs, len)}
    scores = bm25(" ".join(query), corpus)
    sharing = {f"c/r{i}" for i, (t, k, x) in enumerate(rows) if set(query) & set(t + k + x)}
    assert set(scores) == sharing and all(s > 0 for s in scores.values())
    listed = ReferenceRetrieval().lexical(" ".join(query), corpus, None)
    keys = [(-round(s.score * 1e6), s.collection, s.record_id) for s in listed]
    assert keys == sorted(keys)
