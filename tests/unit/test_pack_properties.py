"""Properties of packs over generated corpora, budgets and sets (agent-context-api §7.6-§7.12):
the budget holds, items are whole and offered once, duplicates are never offered, and the same
inputs give the same bytes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_service.adapters.pack.hybrid_features import stem_words
from context_service.domain.context.events import QueryRecord
from context_service.domain.context_set.events import Definition, Instruction, RequiredEvidence
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.pack.engine import assemble
from context_service.domain.pack.items import Pack
from context_service.domain.pack.model import CollectionAt, CollectionCorpus, NamespaceAt
from context_service.domain.pack.render import render
from context_service.domain.pack.request import AsOf, PackRequest
from context_service.domain.pack.retrieval2.reference import ReferenceHybrid
from context_service.domain.pack.scope import pack_scope
from tests.support.hypothesis_profiles import scaled

WORDS = ("cfo", "acme", "board", "lisbon", "office", "report", "budget", "dana", "priya", "q3")
BASE = datetime(2024, 1, 1, tzinfo=UTC)
T = BASE + timedelta(days=180)


CLASSES = ["verified_answers", "definitions", "instructions", "required_evidence", "evidence",
           "whole_document"]


def cost(text: str) -> int:
    return 7 * len(text.split()) + 3


@st.composite
def records(draw: st.DrawFn, collection: str) -> list[QueryRecord]:
    n = draw(st.integers(1, 8))
    out: list[QueryRecord] = []
    for i in range(n):
        words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=25))
        start = draw(st.none() | st.integers(0, 360))
        length = draw(st.none() | st.integers(1, 360))
        out.append(QueryRecord(
            id=f"r{i}", context=collection, type="memory", revision="1",
            text=" ".join(words), title=draw(st.sampled_from(("", "cfo report", "office"))),
            file=draw(st.sampled_from(("", "a.md", "b.md"))),
            valid_from=BASE + timedelta(days=start) if start is not None else None,
            valid_to=(BASE + timedelta(days=(start or 0) + length)
                      if length is not None else None),
            supersedes=tuple(draw(st.sets(st.sampled_from([f"r{j}" for j in range(n)
                                                           if j != i] or ["x"]), max_size=2))),
            fact_key=draw(st.sampled_from(("", "", "k1", "k2")))))
    if draw(st.booleans()):  # a near copy of the first record
        out.append(QueryRecord(id="copy", context=collection, type="memory", revision="1",
                               text=out[0].text + " indeed"))
    return out


@st.composite
def inputs(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(("alpha", "beta", "gamma")), min_size=1, max_size=3,
                          unique=True))
    corpus = {n: CollectionCorpus(n, "1", 5, draw(records(n)), cost) for n in names}
    cosines = {f"{n}/{p.record.id}": draw(st.floats(0, 1)) for n in names
               for p in corpus[n].passages}
    task = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)))
    active = None
    if draw(st.booleans()):
        active = ContextSetState(
            exists=True, id="s", version=2, name="S", collections=tuple(names),
            definitions=(Definition(term="CFO", definition="finance lead"),),
            instructions=(Instruction(id="i", text="be brief " * draw(st.integers(1, 30))),),
            required_evidence=tuple(RequiredEvidence(id=f"q{k}", description="d", query=q)
                                    for k, q in enumerate(draw(st.lists(
                                        st.sampled_from((*WORDS, "zebra")), max_size=3)))))
    request = PackRequest(
        task=task, max_tokens=draw(st.integers(256, 1200)),
        sources=tuple(draw(st.sets(st.sampled_from(("passages", "graph", "documents")),
                                   min_size=1))),
        retrieval=draw(st.sampled_from(("hybrid", "lexical"))),
        context_set_id="s" if active is not None else "")
    return {"corpus": corpus, "cosines": {task: cosines}, "request": request, "active": active}


def build(case: dict[str, Any]) -> Pack:
    corpus: dict[str, CollectionCorpus] = case["corpus"]
    ns = NamespaceAt(namespace="n", position=9, system_time=T, collections={
        n: CollectionAt(name=n, live=True, type="memory", current_revision="1",
                        index_revision="1", publication=5) for n in corpus},
        sets={"s": case["active"]} if case["active"] is not None else {})
    request: PackRequest = case["request"]
    scope = pack_scope(ns, request, case["active"], lambda c: True)
    return assemble(request, AsOf(valid_time=T, system_time=T, position=9), scope, corpus,
                    ReferenceHybrid(stem_words, case["cosines"]), cost, lambda c: True,
                    lambda: False)


@settings(max_examples=scaled(60))
@given(inputs())
def test_the_budget_holds_and_items_are_whole_and_offered_once(case: dict[str, Any]) -> None:
    pack = build(case)
    corpus: dict[str, CollectionCorpus] = case["corpus"]
    assert pack.used_tokens == sum(i.tokens for i in pack.items) <= pack.max_tokens
    ids = [i.id for i in pack.items]
    offered = ids + list(pack.omitted.budget_ids)
    assert len(offered) == len(set(offered))
    assert not set(pack.omitted.duplicate_ids) & set(offered)
    for item in pack.items:
        kind, _, ref = item.id.partition(":")
        if kind == "psg":
            collection, _, record_id = ref.partition("/")
            assert item.text == corpus[collection].by_id[record_id].record.text
            assert item.tokens == cost(item.text) + 16
        elif kind == "doc":
            collection = ref.partition("/")[0]
            assert item.text == corpus[collection].documents[ref].text
        assert item.hash.startswith("sha256:") and len(item.hash) == 71
    for i in pack.items:
        assert set(i.absorbed) <= set(pack.omitted.duplicate_ids)
    assert pack.complete == (pack.missing == ())
    ranks = [CLASSES.index(i.cls) for i in pack.items]
    assert ranks == sorted(ranks)  # set-first: classes never go back
    assert all((i.trust == "approved") == (CLASSES.index(i.cls) < 3) for i in pack.items)
    request: PackRequest = case["request"]
    kinds = {i.id.partition(":")[0] for i in pack.items}
    assert ("psg" in kinds) <= request.wants("passages")
    assert ("gph" in kinds) <= request.wants("graph")
    assert ("doc" in kinds) <= request.wants("documents")


@settings(max_examples=scaled(60))
@given(inputs())
def test_the_same_inputs_give_the_same_bytes(case: dict[str, Any]) -> None:
    first = render(build(case), "rp_x", T)
    assert render(build(case), "rp_x", T) == first


@settings(max_examples=scaled(60))
@given(inputs())
def test_a_larger_budget_packs_everything_offered(case: dict[str, Any]) -> None:
    roomy = dict(case, request=PackRequest(**{
        **{f: getattr(case["request"], f) for f in case["request"].__struct_fields__},
        "max_tokens": 32000}))
    pack = build(roomy)
    assert pack.omitted.budget_count == 0 and pack.omitted.budget_ids == ()
    assert all(m.reason != "budget" for m in pack.missing)
