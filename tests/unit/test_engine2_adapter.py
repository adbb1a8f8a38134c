"""pack-engine/2's vectorised hybrid list (``adapters.pack.hybrid``) against the plain-Python
rules (``retrieval2.reference``), its exact cosines, determinism across processes, and a pack
that an unreadable collection beside it never changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from context_service.adapters.pack.hybrid import (
    Part,
    bm25,
    cosines,
    hybrid_list,
    in_documents,
    lexical_scores,
)
from context_service.adapters.pack.hybrid_features import HybridFeatures, ModelPieces, stem_words
from context_service.adapters.pack.lexical import LexicalIndex, span_positions
from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.engine import assemble
from context_service.domain.pack.model import (
    CollectionAt,
    CollectionCorpus,
    Corpus,
    Scored,
    document_id,
)
from context_service.domain.pack.reference import ReferenceRetrieval
from context_service.domain.pack.render import render
from context_service.domain.pack.request import AsOf, PackRequest
from context_service.domain.pack.retrieval2 import reference
from context_service.domain.pack.retrieval2.analyzer import query_terms, record_terms
from context_service.domain.pack.retrieval2.bm25 import K1, B, idf
from context_service.domain.pack.retrieval2.feedback import expansion, feedback_query
from context_service.domain.pack.retrieval2.informative import factors, information, weighed
from context_service.domain.pack.retrieval2.neighbours import (
    asks,
    with_document_prior,
    with_neighbours,
)
from context_service.domain.pack.retrieval2.reference import ReferenceHybrid
from context_service.domain.pack.scope import pack_scope
from tests.support.hypothesis_profiles import scaled
from tests.unit import pack_cfo as ex

ROOT = Path(__file__).resolve().parents[2]
MODEL = ModelPieces()
BESIDE = ThreadPoolExecutor(1, thread_name_prefix="beside")
STOPPED = ThreadPoolExecutor(1)  # shut down, as at the service's stop: computed in the caller
STOPPED.shutdown()
WORDS = ("appointed", "appointment", "cfo", "board", "lisbon", "office", "the", "was", "when",
         "report", "reports", "budget", "priya", "dana", "moved", "moving", "q3")
T = datetime(2025, 1, 1, tzinfo=UTC)


class AdapterRetrieval(ReferenceRetrieval):
    """§7.5's lexical list from the reference, the hybrid list from the service's adapter.

    A collection's features and index are built once and reused by every later request, as the
    service's corpus cache does (``adapters.pack.corpus``); only the query is analysed per pack.
    """

    def __init__(self) -> None:
        super().__init__()
        self._built: dict[int, tuple[CollectionCorpus, HybridFeatures, LexicalIndex]] = {}

    def part(self, c: CollectionCorpus, eligible: frozenset[str] | None) -> Part:
        built = self._built.get(id(c))
        if built is None or built[0] is not c:
            built = self._built[id(c)] = (c, HybridFeatures(c, MODEL), LexicalIndex(c))
        return Part(built[1], built[2], eligible)

    def hybrid(self, query: str, corpus: Corpus, eligible: frozenset[str] | None,
               requirement: bool) -> list[Scored]:
        parts = [self.part(c, eligible) for _, c in sorted(corpus.items())]
        return hybrid_list(query, parts, MODEL.token_ids([query])[0], MODEL.rows, requirement)


def text(draw: Any) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12)))


@st.composite
def collection(draw: st.DrawFn, name: str) -> CollectionCorpus:
    n = draw(st.integers(1, 9))
    records = [QueryRecord(id=f"r{i}", context=name, type="memory", revision="1",
                           text=text(draw) + draw(st.sampled_from(("", "?"))),
                           title=draw(st.sampled_from(("", "cfo report"))),
                           keywords=tuple(draw(st.lists(st.sampled_from(WORDS), max_size=2))),
                           file=draw(st.sampled_from(("", "a.md", "b.md"))))
               for i in range(n)]
    return CollectionCorpus(name, "1", 5, records, len)


@st.composite
def corpora(draw: st.DrawFn) -> dict[str, CollectionCorpus]:
    names = draw(st.lists(st.sampled_from(("alpha", "beta")), min_size=1, max_size=2,
                          unique=True))
    return {n: draw(collection(n)) for n in names}


@settings(max_examples=scaled(60), deadline=None)
@given(corpora(), st.data())
def test_the_adapter_list_is_the_reference_list(corpus: dict[str, CollectionCorpus],
                                                 data: st.DataObject) -> None:
    documents = sorted({d for c in corpus.values() for d in c.documents})
    adapter_and_reference(corpus, text(data.draw), data.draw(
        st.none() | st.frozensets(st.sampled_from(documents))), data.draw(st.booleans()))


def adapter_and_reference(corpus: dict[str, CollectionCorpus], text: str,
                          eligible: frozenset[str] | None, requirement: bool) -> None:
    """The adapter's list is the reference's (given the adapter's cosines and related
    documents), and its lexical scores are the reference's bit for bit."""
    names = sorted(corpus)
    retrieval = AdapterRetrieval()
    parts = [retrieval.part(corpus[n], eligible) for n in names]
    ids = MODEL.token_ids([text])[0]
    got = hybrid_list(text, parts, ids, MODEL.rows, requirement)
    # the cosines computed on another thread while this one computes rules 1-5: the same list
    assert hybrid_list(text, parts, ids, MODEL.rows, requirement, BESIDE) == got
    assert hybrid_list(text, parts, ids, MODEL.rows, requirement, STOPPED) == got
    given_cosines = {f"{n}/{rid}": c for n, part, cos in zip(
        names, parts, cosines(ids, parts, MODEL.rows), strict=True)
        for rid, c in zip(part.features.record_ids, cos.tolist(), strict=True)}
    linked = frozenset(
        document_id(n, p.record) for n, part in zip(names, parts, strict=True)
        for row, p in enumerate(corpus[n].passages)
        if part.features.related[part.features.documents[row]])
    want = ReferenceHybrid(stem_words, {text: given_cosines}, linked).hybrid(
        text, corpus, eligible, requirement)
    mine = np.concatenate([np.zeros(0), *lexical_scores(text, parts)])
    _, _, theirs = reference.lexical_scores(text, corpus, eligible, stem_words, linked)
    assert mine.tolist() == theirs  # bit for bit: rule 2 is computed in one order
    assert got == want


def test_cosines_are_exact_on_the_grid() -> None:
    corpus = CollectionCorpus("c", "1", 1, [
        QueryRecord(id=f"r{i}", context="c", type="memory", revision="1",
                    text=" ".join(WORDS[i:i + 5])) for i in range(12)], len)
    part = AdapterRetrieval().part(corpus, None)
    query = "when was the cfo appointed"
    ids = MODEL.token_ids([query])[0]
    q = part.features.query_vector(ids, MODEL.rows)
    got = (part.features.vectors @ q).tolist()
    exact = [float(sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(row, q,
                                                                              strict=True)))
             for row in part.features.vectors.tolist()]
    assert got == exact
    assert np.all(np.abs(part.features.vectors * 1024 - np.rint(part.features.vectors * 1024))
                  == 0)


def _packs(seed_corpus: int, count: int) -> list[str]:
    """``count`` packs over a generated corpus, as response bodies."""
    import random

    rng = random.Random(seed_corpus)
    records = [QueryRecord(id=f"t{i:03d}", context="company-facts", type="memory",
                           revision="1", file=f"session_{i // 20}",
                           text=" ".join(rng.choices(WORDS, k=rng.randint(3, 15)))
                           + rng.choice(("", "", "?")))
               for i in range(200)]
    corpus = {"company-facts": CollectionCorpus("company-facts", ex.REV, 1800, records, len)}
    ns = ex.namespace(sets={})
    retrieval = AdapterRetrieval()
    bodies = []
    for k in range(count):
        task = " ".join(rng.choices(WORDS, k=rng.randint(1, 6)))
        request = PackRequest(task=task, max_tokens=rng.choice((300, 800, 2000)))
        scope = pack_scope(ns, request, None, lambda _: True)
        pack = assemble(request, AsOf(valid_time=T, system_time=T, position=1842 + k), scope,
                        corpus, retrieval, len, lambda _: True, lambda: False)
        bodies.append(render(pack, f"rp_{k}", T).decode())
    return bodies


def test_the_same_packs_byte_for_byte_in_two_processes() -> None:
    """200 packs, each process with another hash seed, against this one's."""
    here = _packs(7, 200)
    script = ("import json; from tests.unit.test_engine2_adapter import _packs; "
              "print(json.dumps(_packs(7, 200)))")
    # both processes run at once: they share nothing but the interpreter's files
    runs = [subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for seed in ("1", "2")]
    outputs = [(run.communicate(), run.returncode) for run in runs]
    for (out, err), returncode in outputs:
        assert returncode == 0, err
        assert json.loads(out) == here


@settings(max_examples=scaled(40), deadline=None)
@given(collection("company-facts"), collection("secret"), st.data())
def test_an_unreadable_collection_never_changes_a_pack(
        facts: CollectionCorpus, secret: CollectionCorpus, data: st.DataObject) -> None:
    task = text(data.draw)
    request = PackRequest(task=task, max_tokens=data.draw(st.integers(50, 400)))
    at = {name: CollectionAt(name=name, live=True, type="memory", current_revision="1",
                             index_revision="1", publication=5) for name in ("company-facts",
                                                                               "secret")}
    corpora = {"company-facts": facts, "secret": secret}

    def body(names: tuple[str, ...]) -> bytes:
        ns = ex.namespace(sets={}, collections={n: at[n] for n in names})
        scope = pack_scope(ns, request, None, lambda c: c != "secret")
        corpus = {c.name: corpora[c.name] for c in scope.usable}
        pack = assemble(request, AsOf(valid_time=T, system_time=T, position=9), scope, corpus,
                        AdapterRetrieval(), len, lambda c: c != "secret", lambda: False)
        return render(pack, "rp_1", T)

    assert body(("company-facts", "secret")) == body(("company-facts",))


def test_records_of_stop_words_only_match_nothing() -> None:
    # no record holds a retrieval term: BM25's average length is 0, and the list is empty
    # rather than a division by zero (a request's error)
    records = [QueryRecord(id=f"r{i}", context="alpha", type="memory", revision="1",
                           text="the was when", file="a.md") for i in range(3)]
    corpus = {"alpha": CollectionCorpus("alpha", "1", 5, records, len)}
    retrieval = AdapterRetrieval()
    part = retrieval.part(corpus["alpha"], None)
    got = hybrid_list("appointed cfo", [part], MODEL.token_ids(["appointed cfo"])[0],
                      MODEL.rows, False)
    assert got == ReferenceHybrid(stem_words).hybrid("appointed cfo", corpus, None, False)
    assert got == []


def test_a_collection_without_terms_beside_one_with_them_matches_nothing() -> None:
    # the other collection holds terms, so BM25 runs; this one holds none (no postings at
    # all), and reading its spans must find nothing rather than fail the request
    quiet = [QueryRecord(id=f"q{i}", context="alpha", type="memory", revision="1",
                         text="the was when", file="a.md") for i in range(3)]
    talk = [QueryRecord(id=f"t{i}", context="beta", type="memory", revision="1",
                        text=f"the board appointed the cfo {i}", file="b.md") for i in range(3)]
    corpus = {"alpha": CollectionCorpus("alpha", "1", 5, quiet, len),
              "beta": CollectionCorpus("beta", "1", 6, talk, len)}
    retrieval = AdapterRetrieval()
    parts = [retrieval.part(corpus[n], None) for n in ("alpha", "beta")]
    lo, hi = parts[0].features.spans(["appoint", "cfo"])
    assert lo.tolist() == hi.tolist() == [0, 0]
    got = hybrid_list("appointed cfo", parts, MODEL.token_ids(["appointed cfo"])[0],
                      MODEL.rows, False)
    assert sorted((s.collection, s.record_id) for s in got) == [
        ("beta", "t0"), ("beta", "t1"), ("beta", "t2")]


def test_a_related_conversation_weighs_its_turns_as_the_reference_does() -> None:
    # a file of turns on one topic (its neighbours' vectors related) beside notes on another:
    # rule 4b's factors apply to the turns, and the service's list is the reference's
    turns = ["Who was appointed CFO by the board?", "The board appointed Priya as CFO.",
             "When was the CFO appointment?", "The appointment of the CFO was in Q3.",
             "Did the board report the budget?", "The CFO report covered the budget.",
             "Thanks!", "The board approved the CFO budget report in Q3."]
    notes = ["The Lisbon office is moving.", "Dana moved to the Lisbon office.",
             "Moving the office to Lisbon.", "Lisbon office moving report.",
             "The office in Lisbon was moving when Dana moved."]
    records = ([QueryRecord(id=f"t{i}", context="alpha", type="memory", revision="1",
                            text=t, file="chat.md") for i, t in enumerate(turns)]
               + [QueryRecord(id=f"n{i}", context="alpha", type="memory", revision="1",
                              text=t) for i, t in enumerate(notes)])
    corpus = {"alpha": CollectionCorpus("alpha", "1", 5, records, len)}
    retrieval = AdapterRetrieval()
    part = retrieval.part(corpus["alpha"], None)
    features = part.features
    chat = int(features.documents[0])
    assert features.related[chat]
    assert features.asks.tolist()[:3] == [True, False, True]
    turn_factors = features.factor[:len(turns)]
    assert (turn_factors != 1.0).all() and (features.factor[len(turns):] == 1.0).all()
    assert turn_factors[6] < 1.0  # "Thanks!" carries nothing of its own
    for query in ("cfo appointed", "board budget report", "lisbon office"):
        ids = MODEL.token_ids([query])[0]
        got = hybrid_list(query, [part], ids, MODEL.rows, False)
        cos = {f"alpha/{rid}": c for rid, c in zip(
            features.record_ids, cosines(ids, [part], MODEL.rows)[0].tolist(), strict=True)}
        want = ReferenceHybrid(stem_words, {query: cos}, frozenset({"alpha/chat.md"})).hybrid(
            query, corpus, None, False)
        assert got == want


def test_a_common_expansion_term_is_left_out_as_the_reference_leaves_it() -> None:
    # every note names the office, eleven of twelve Lisbon: feedback reads the first five hits,
    # whose most frequent terms include "office", held by all twelve records (> 9 in 10)
    texts = [f"The Lisbon office {w} report." for w in WORDS[:11]] + ["Dana moved office."]
    records = [QueryRecord(id=f"n{i:02d}", context="alpha", type="memory", revision="1",
                           text=t) for i, t in enumerate(texts)]
    corpus = {"alpha": CollectionCorpus("alpha", "1", 5, records, len)}
    part = AdapterRetrieval().part(corpus["alpha"], None)
    query = "lisbon budget"
    terms = query_terms(query, stem_words)
    first = bm25(dict(terms), [part])
    hits = sorted(range(len(records)), key=lambda r: (-first[0][r], records[r].id))[:5]
    expanded = expansion([(float(first[0][r]), part.features.bag(r)) for r in hits])
    assert "offic" in dict(expanded)
    weighted = feedback_query(terms, expanded)
    new_terms = weighted.keys() - terms.keys()
    assert (bm25(weighted, [part], new_terms)[0] != bm25(weighted, [part])[0]).any()
    assert (lexical_scores(query, [part])[0]
            == in_documents(bm25(weighted, [part], new_terms)[0], part.features)).all()
    ids = MODEL.token_ids([query])[0]
    cos = {f"alpha/{rid}": c for rid, c in zip(
        part.features.record_ids, cosines(ids, [part], MODEL.rows)[0].tolist(), strict=True)}
    want = ReferenceHybrid(stem_words, {query: cos}).hybrid(query, corpus, None, False)
    assert hybrid_list(query, [part], ids, MODEL.rows, False) == want


def term_by_term(query: dict[str, float], parts: list[Part]) -> list[np.ndarray]:
    """Rule 2 the plain way: each term's postings added to each collection's scores in turn."""
    n = sum(len(p.features) for p in parts)
    avgdl = sum(p.features.total_length for p in parts) / n
    out = [np.zeros(len(p.features)) for p in parts]
    for term, weight in query.items():
        found = [(p.features.terms.get(term), p.features) for p in parts]
        held = sum(int(f.posting_starts[t + 1] - f.posting_starts[t])
                   for t, f in found if t is not None)
        if not held:
            continue
        for scores, (t, f) in zip(out, found, strict=True):
            if t is None:
                continue
            lo, hi = int(f.posting_starts[t]), int(f.posting_starts[t + 1])
            s = f.posting_dl[lo:hi] * (K1 * B / avgdl)
            s += f.posting_base[lo:hi]
            np.divide(f.posting_numerator[lo:hi], s, out=s)
            s *= weight * idf(n, held)
            scores[f.posting_rows[lo:hi]] += s
    return out


@settings(max_examples=scaled(60), deadline=None)
@given(corpora(), st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from((0.1, 0.5, 1.0, 3.0))),
                           min_size=1, max_size=8))
def test_bm25_read_at_once_adds_the_same_doubles_as_term_by_term(
        corpus: dict[str, CollectionCorpus], weighted: list[tuple[str, float]]) -> None:
    # the service reads each collection's postings of every term at once and sums them per
    # record with bincount: bit for bit the sums of adding term after term
    parts = [AdapterRetrieval().part(corpus[n], None) for n in sorted(corpus)]
    query = {stem_words([w])[0]: x for w, x in weighted}
    if not sum(p.features.total_length for p in parts):
        return
    got = bm25(query, parts)
    want = term_by_term(query, parts)
    assert all(g.tolist() == w.tolist() for g, w in zip(got, want, strict=True))


def test_postings_are_read_span_after_span() -> None:
    at, lengths = span_positions(np.array([2, 0, 5]), np.array([4, 0, 7]))
    assert at.tolist() == [2, 3, 5, 6] and lengths.tolist() == [2, 0, 2]
    assert span_positions(np.array([0]), np.array([0]))[0].tolist() == []


@settings(max_examples=scaled(60), deadline=None)
@given(collection("alpha"), st.data())
def test_rules_4_to_5_are_the_reference_s_bit_for_bit(corpus: CollectionCorpus,
                                                       data: st.DataObject) -> None:
    # BM25 is compared at millionths (the service groups its formula otherwise); what follows
    # it is the same operations: given the same scores, the same doubles
    features = HybridFeatures(corpus, MODEL)
    n = len(features)
    s = data.draw(st.lists(st.sampled_from((0.0, 0.5, 1.25, 2.0, 3.7)), min_size=n, max_size=n))
    related = data.draw(st.lists(st.booleans(), min_size=features.n_documents,
                                 max_size=features.n_documents))
    features.related = np.array(related, dtype=np.bool_)
    documents = features.documents.tolist()
    info = information([record_terms(p.record.title, p.record.keywords, p.record.text,
                                     stem_words) for p in corpus.passages])
    features.factor = np.array(factors(info, documents, related), dtype=np.float64)
    turns = with_neighbours(s, features.previous.tolist(), features.following.tolist(),
                            [asks(p.record.text) for p in corpus.passages])
    want = with_document_prior(weighed(turns, factors(info, documents, related)), documents)
    assert in_documents(np.array(s, dtype=np.float64), features).tolist() == want


def test_the_loaded_factors_are_the_domain_s() -> None:
    records = [QueryRecord(id=f"t{i}", context="alpha", type="memory", revision="1",
                           text=t, file="chat.md")
               for i, t in enumerate(("Who was appointed CFO by the board?",
                                      "The board appointed Priya as CFO in Lisbon.",
                                      "No.", "The budget report was moved to Q3."))]
    corpus = CollectionCorpus("alpha", "1", 5, records, len)
    features = HybridFeatures(corpus, MODEL)
    info = information([record_terms(p.record.title, p.record.keywords, p.record.text,
                                     stem_words) for p in corpus.passages])
    assert info[2] == 0.0  # "No." holds only a stop word
    related = features.related.tolist()
    assert features.factor.tolist() == factors(info, features.documents.tolist(), related)
    floored = factors(info, [0, 0, 0, 0], [True])
    assert floored[2] == 0.25 ** 0.4  # a turn without terms keeps part of what rule 4 lent
