"""contextctl's local query: the service's context selection (spec 5.1 steps 2 to 5) over the
local store, and the search of spec 5.2 through the rules the service shares
(``context_service.lexical``), checked against the spec's worked example and, on random records,
against the in-test reference of the spec and the service's domain functions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_service.contextctl.local import LocalContext, LocalStore, LocalStoreError, search
from context_service.contextctl.local.search import rank
from context_service.domain.query import scoring, tokenizer
from context_service.lexical import order_key, query_terms, score, tokenize, weighted_terms
from tests.unit.test_query_reference import reference_search, reference_tokenize


@pytest.fixture
def store(tmp_path: Path) -> LocalStore:
    return LocalStore(tmp_path / "home")


def knowledge(store: LocalStore, name: str, records: list[dict[str, Any]]) -> LocalContext:
    context = store.create(name, "knowledge")
    (context.root / "knowledge" / "records.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return context


def memory(store: LocalStore, name: str, text: str | None) -> LocalContext:
    context = store.create(name, "memory")
    if text is not None:
        (context.root / "memory" / "MEMORY.md").write_text(text, encoding="utf-8")
    return context


WORKED = [{"id": "c", "title": "Unrelated", "text": "nothing here"},
          {"id": "b", "title": "Release", "text": "release schedule"},
          {"id": "a", "title": "Release schedule", "text": "Friday release schedule"}]


def test_the_specs_worked_example(store: LocalStore) -> None:
    knowledge(store, "kb", WORKED)
    items, unavailable = search(store, "release schedule")
    assert [(i["score"], i["record"]["id"]) for i in items] == [(8, "a"), (5, "b")]
    assert unavailable == []
    first, _ = search(store, "release schedule", limit=1)
    assert [(i["score"], i["record"]["id"]) for i in first] == [(8, "a")]
    record = items[0]["record"]
    assert (record["context"], record["type"], record["revision"]) == (
        "kb", "knowledge", store.open("kb").content().revision)


def test_ties_are_ordered_by_context_then_id_by_code_point(store: LocalStore) -> None:
    knowledge(store, "kb", [{"id": "b", "text": "x"}, {"id": "B", "text": "x"},
                            {"id": "\u00e9", "text": "x"}])
    knowledge(store, "ka", [{"id": "z", "text": "x"}])
    items, _ = search(store, "x")
    assert [(i["record"]["context"], i["record"]["id"]) for i in items] == [
        ("ka", "z"), ("kb", "B"), ("kb", "b"), ("kb", "\u00e9")]


def test_filters_and_ids_act_as_the_service_does(store: LocalStore) -> None:
    knowledge(store, "kb", [
        {"id": "a", "text": "release", "source": {"context": "s1", "type": "state",
                                                  "revision": ""}},
        {"id": "b", "text": "release notes"},
        {"id": "c", "text": "other"}])
    memory(store, "mem", "release train\n")
    ids = lambda found: [i["record"]["id"] for i in found[0]]  # noqa: E731
    assert ids(search(store, "release", types=["knowledge"])) == ["a", "b"]
    assert ids(search(store, "release", source_contexts=["s1"])) == ["a"]
    assert ids(search(store, "release", ids=["b", "c"])) == ["b"]  # ids and text both
    assert ids(search(store, "", ids=["c"])) == ["c"]
    assert [i["score"] for i in search(store, "?!", ids=["a", "c"])[0]] == [1, 1]
    revision = store.open("mem").content().revision
    assert [i["record"]["context"] for i in search(store, "release",
                                                   revisions=[revision])[0]] == ["mem"]


def test_unavailable_and_skipped_contexts(store: LocalStore) -> None:
    memory(store, "mem-empty", None)
    store.create("kb-empty", "knowledge")
    memory(store, "mem", "release\n")
    state = store.create("state", "state")
    (state.root / "memory" / "MEMORY.md").write_text("release\n", encoding="utf-8")
    items, unavailable = search(store, "release")
    assert [i["record"]["context"] for i in items] == ["mem"]
    assert unavailable == ["kb-empty", "mem-empty"]  # in context-name order
    _, named = search(store, "release", contexts=["mem-empty", "state", "mem", "mem-empty"])
    assert named == ["mem-empty"]


def test_a_named_context_that_does_not_exist_is_an_error(store: LocalStore) -> None:
    memory(store, "mem", "release\n")
    with pytest.raises(LocalStoreError, match=r"^local context not found: nope$"):
        search(store, "release", contexts=["mem", "nope"])


def test_the_request_checks(store: LocalStore) -> None:
    memory(store, "mem", "release\n")
    with pytest.raises(LocalStoreError, match="query or ids is required"):
        search(store, "  ")
    for limit in (0, 101, -1):
        with pytest.raises(LocalStoreError, match="limit must be between 1 and 100"):
            search(store, "release", limit=limit)
    assert len(search(store, "release", limit=100)[0]) == 1


def test_the_domain_uses_the_shared_rules() -> None:
    assert tokenizer.tokenize is tokenize
    assert (scoring.weighted_terms, scoring.query_terms, scoring.score, scoring.order_key) == (
        weighted_terms, query_terms, score, order_key)
    assert (scoring.TITLE_WEIGHT, scoring.KEYWORD_WEIGHT, scoring.TEXT_WEIGHT) == (3, 2, 1)
    assert tokenize("Release-schedule v2!") == ["release", "schedule", "v2"]


WORDS = ("release", "Release", "schedule", "notes", "v2", "Stra\u00dfe", "STRASSE",
         "\u4e1c\u4eac", "x\u00b2y", "plan", "a_b", "na\u00efve")
words = st.lists(st.sampled_from(WORDS), max_size=5).map(" - ".join)
records = st.lists(st.fixed_dictionaries({
    "id": st.sampled_from(("a", "b", "B", "a1", "\u00e9", "z")),
    "context": st.sampled_from(("ka", "kb", "kc")),
    "type": st.sampled_from(("memory", "knowledge")),
    "revision": st.sampled_from(("r1", "r2")),
    "title": words,
    "text": st.one_of(words, st.text(max_size=12)),
    "keywords": st.lists(words, max_size=3),
    "source": st.fixed_dictionaries({"context": st.sampled_from(("", "s1", "s2")),
                                     "type": st.just("state"), "revision": st.just("")}),
}), max_size=12)
queries = st.one_of(st.lists(st.sampled_from(WORDS), max_size=3).map(" ".join),
                    st.sampled_from(("release release", "?!", "")))
some = st.one_of(st.just(()), st.lists(st.sampled_from(("a", "b", "B", "q")), min_size=1,
                                       max_size=2))


@given(records, queries, some, st.sampled_from(((), ("memory",), ("knowledge", "memory"))),
       st.sampled_from(((), ("s1",), ("", "s2"))), st.sampled_from(((), ("r1",))))
def test_the_local_ranking_is_the_specs_and_the_services(
        candidates: list[dict[str, Any]], query: str, ids: tuple[str, ...],
        types: tuple[str, ...], source_contexts: tuple[str, ...],
        revisions: tuple[str, ...]) -> None:
    candidates = sorted(candidates, key=lambda r: r["context"])  # contexts in name order
    local = rank(candidates, query, types, source_contexts, revisions, ids)
    reference = reference_search(candidates, query, types, source_contexts, revisions, ids)
    assert [(i["score"], i["record"]) for i in local] == reference
    # and the service's own domain functions score and order every record the same way
    terms = scoring.query_terms(query)
    for item in local:
        record = item["record"]
        weights = scoring.weighted_terms(record["title"], record["keywords"], record["text"])
        assert scoring.score(weights, terms) == item["score"]
    keys = [scoring.order_key(i["score"], i["record"]["context"], i["record"]["id"])
            for i in local]
    assert keys == sorted(keys)
    assert all(tokenizer.tokenize(r["text"]) == reference_tokenize(r["text"])
               for r in candidates)
