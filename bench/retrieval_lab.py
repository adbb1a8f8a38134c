"""An offline lab for pack-engine/2's hybrid list: the figures of ``bench.bench_retrieval``
computed in one process, without a database or HTTP, for the engine as it is (the baseline) and
for variants of its rules.

    python -m bench.retrieval_lab [--locomo PATH] [--cranfield DIR] [--limit-questions N]
                                  [--variants NAME,...] [--list] [--json PATH]
                                  [--encoder VECTORS.npz] [--per-question PATH]

Each benchmark collection is built as the service builds a loaded index (``corpus.Cached``:
the corpus, its deduplication signatures, §7.5's postings and pack-engine/2's features, with
the bundled wordllama model), and every question is packed by the engine's own ``assemble``
(the relevance floor, the deduplicating walk, greedy packing) at the benchmark's budgets, over
the service's ``FastRetrieval``. The loaders and the measures are ``bench.bench_retrieval``'s,
so the baseline row is the served benchmark's figures (its latencies here are in-process).

A variant replaces one or more of the seams of the hybrid list and leaves the rest to the
service's code (``hybrid.hybrid_list``: the fusion, the admission of candidates, the cut):

- ``lexical(query, parts)``: rules 1-5, each collection's lexical scores;
- ``cosines(query_ids, parts, matrix, lexical)``: rule 6, each collection's cosines (given the
  lexical scores, for rules that read them);
- ``weight``: rule 7's vector weight (or ``weigh(query, parts)``: a weight per query);
- ``query_cosines(query_ids, parts, matrix, lexical, query)``: rule 6 given the query's text
  (for cosines read from elsewhere: ``--encoder``, ``bench.retrieval_lab_encoder``);
- ``listed(query, parts, found)``: the finished list, re-ordered or its lexical shares (which
  the relevance floor reads) rewritten;
- ``floor``: the relevance floor's constants (floor, depth).

A new variant is a function returning ``Variant``s, registered in ``GRIDS`` by name. Variants
are kept only if they gain on both collections; the lab prints, for each, how many questions
(LoCoMo at each depth and budget, Cranfield's queries) it makes better and worse than the
baseline. ``--per-question`` writes every row's figures question by question, so that a part of
the collections (a split half: weights chosen on one half, scored on the other) can be scored
without running the lab again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import msgspec
import numpy as np
import numpy.typing as npt

from bench import bench_retrieval as served
from bench import retrieval_lab_encoder as encoded
from bench.bench_retrieval import (
    CRANFIELD_BUDGET,
    CRANFIELD_DEFAULT,
    DEPTHS,
    LOCOMO_BUDGETS,
    LOCOMO_DEFAULT,
    MODES,
    Asked,
    Bm25,
    Collection,
    Question,
    cranfield_figures,
    evenly,
    limited,
    load_cranfield,
    load_locomo,
    locomo_figures,
    ndcg,
    recall,
    token_costs,
)
from context_service.adapters.pack import hybrid
from context_service.adapters.pack.corpus import PROCESS_MODEL, Cached, CorpusLoader
from context_service.adapters.pack.hybrid import Part, _first_hits, bm25, in_documents
from context_service.adapters.pack.hybrid_features import (
    Floats,
    HybridFeatures,
    QueryPieces,
    on_grid,
    stem_words,
    unit_rows,
)
from context_service.adapters.pack.lexical import LexicalIndex
from context_service.adapters.pack.retrieval import FastRetrieval
from context_service.domain.context.events import QueryRecord
from context_service.domain.pack import engine
from context_service.domain.pack.engine import assemble
from context_service.domain.pack.items import Pack
from context_service.domain.pack.model import (
    CollectionAt,
    CollectionCorpus,
    Corpus,
    NamespaceAt,
    Scored,
)
from context_service.domain.pack.request import AsOf, PackRequest
from context_service.domain.pack.retrieval2.analyzer import STOP_WORDS, query_terms
from context_service.domain.pack.retrieval2.bm25 import idf
from context_service.domain.pack.retrieval2.feedback import (
    FEEDBACK_HITS,
    ORIGINAL_WEIGHT,
    expansion,
    feedback_query,
    informative,
)
from context_service.domain.pack.retrieval2.floor import FLOOR_DEPTH, LEXICAL_FLOOR
from context_service.domain.pack.retrieval2.fusion import (
    COSINE_UNIT,
    SPREAD,
    VECTOR_WEIGHT,
    moments,
)
from context_service.domain.pack.scope import pack_scope
from context_service.domain.query.tokenizer import tokenize

VALID = datetime.fromisoformat(served.VALID.replace("Z", "+00:00"))
AS_OF = AsOf(valid_time=VALID, system_time=VALID, position=1)
PUBLICATION = 1

Matrix = npt.NDArray[np.float32]
LexicalRule = Callable[[str, Sequence[Part]], list[Floats]]
WeightRule = Callable[[str, Sequence[Part]], float]
CosineRule = Callable[[Sequence[int], Sequence[Part], Matrix, list[Floats]], list[Floats]]
QueryCosineRule = Callable[[Sequence[int], Sequence[Part], Matrix, list[Floats], str],
                           list[Floats]]
ListRule = Callable[[str, Sequence[Part], list[Scored]], list[Scored]]


# --- variants ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """A change to the hybrid list: ``None`` keeps the service's rule."""

    name: str
    constants: str = ""
    lexical: LexicalRule | None = None
    cosines: CosineRule | None = None
    weight: float | None = None
    weigh: WeightRule | None = None  # a weight per query, in place of ``weight``
    query_cosines: QueryCosineRule | None = None  # rule 6 given the query's text too
    listed: ListRule | None = None  # the finished list re-ordered or its shares rewritten
    floor: tuple[float, int] | None = None  # the relevance floor's constants (floor, depth)

    @property
    def is_baseline(self) -> bool:
        return (self.lexical is None and self.cosines is None and self.weight is None
                and self.weigh is None and self.query_cosines is None and self.listed is None
                and self.floor is None)


BASELINE = Variant("pack-engine/2")


@contextlib.contextmanager
def floor_constants(constants: tuple[float, int] | None) -> Iterator[None]:
    """The engine's relevance floor with the given constants (``None``: the service's)."""
    if constants is None:
        yield
        return
    saved: Callable[[Sequence[float], float, int], int] = getattr(engine, "floor_cut")  # noqa: B009
    given, depth = constants

    def cut(shares: Sequence[float]) -> int:
        return saved(shares, given, depth)
    setattr(engine, "floor_cut", cut)  # noqa: B010
    try:
        yield
    finally:
        setattr(engine, "floor_cut", saved)  # noqa: B010


@contextlib.contextmanager
def seams(weight: float, lexical: list[Floats], cos: list[Floats]) -> Iterator[None]:
    """``hybrid.hybrid_list`` reading the given lexical scores, cosines and vector weight: the
    service's fusion, admission and cut, unchanged, over the variant's inputs."""
    names = ("lexical_scores", "cosines", "VECTOR_WEIGHT")
    saved = [getattr(hybrid, name) for name in names]
    given = (lambda _query, _parts: lexical, lambda _ids, _parts, _matrix: cos, weight)
    for name, value in zip(names, given, strict=True):
        setattr(hybrid, name, value)
    try:
        yield
    finally:
        for name, value in zip(names, saved, strict=True):
            setattr(hybrid, name, value)


def service_cosines(query_ids: Sequence[int], parts: Sequence[Part], matrix: Matrix,
                    _lexical: list[Floats]) -> list[Floats]:
    return hybrid.cosines(query_ids, parts, matrix)


# --- the collections, built as the service loads them ------------------------------------------


class HeldCorpora(CorpusLoader):
    """The corpus loader's lookups over corpora built here (no database): what a load computed
    (``corpus.Cached``), by corpus."""

    def __init__(self, built: Sequence[Cached]) -> None:
        super().__init__(cast(Any, None), PROCESS_MODEL.embedder.count)
        self.built = {id(c.corpus): c for c in built}

    def lexical(self, corpus: CollectionCorpus) -> LexicalIndex:
        return self.built[id(corpus)].lexical

    def hybrid(self, corpus: CollectionCorpus) -> HybridFeatures:
        return self.built[id(corpus)].hybrid


_built: dict[int, Cached] = {}  # every loaded index built here, by its features (``vocabulary``)


def build(collections: Sequence[Collection]) -> dict[str, Cached]:
    """Each collection's loaded index, computed as ``CorpusLoader`` computes it."""
    count = PROCESS_MODEL.embedder.count
    out = {}
    for c in collections:
        records = [msgspec.convert(r, QueryRecord) for r in c.records]
        corpus = CollectionCorpus(c.name, served._revision(c.name), PUBLICATION, records, count)
        cached = Cached(corpus, PROCESS_MODEL)
        out[c.name] = _built[id(cached.hybrid)] = cached
    return out


def namespace(collections: Sequence[Collection]) -> NamespaceAt:
    revisions = {c.name: served._revision(c.name) for c in collections}
    return NamespaceAt(namespace="lab", position=1, system_time=VALID, sets={}, collections={
        c.name: CollectionAt(name=c.name, live=True, type=c.type,
                             current_revision=revisions[c.name],
                             index_revision=revisions[c.name], publication=PUBLICATION)
        for c in collections})


class LabRetrieval(FastRetrieval):
    """The service's retrieval over the held corpora; the hybrid list is the variant's,
    memoised per query (a question's packs at three budgets read one list)."""

    def __init__(self, loader: HeldCorpora) -> None:
        super().__init__(loader, cast(Any, None), lambda _query: None)
        self.variant = BASELINE
        self._lists: dict[tuple[str, tuple[str, ...], bool], list[Scored]] = {}

    def use(self, variant: Variant) -> None:
        self.variant = variant
        self._lists.clear()

    def hybrid(self, query: str, corpus: Corpus, eligible: frozenset[str] | None,
               requirement: bool) -> list[Scored]:
        assert eligible is None  # the benchmarks filter collections, not documents
        key = (query, tuple(sorted(corpus)), requirement)
        if key not in self._lists:
            self._lists[key] = self._list(query, corpus, requirement)
        return self._lists[key]

    def _list(self, query: str, corpus: Corpus, requirement: bool) -> list[Scored]:
        v = self.variant
        if v.is_baseline:
            return super().hybrid(query, corpus, None, requirement)
        chosen = [c for _, c in sorted(corpus.items())]
        parts = [Part(self.loader.hybrid(c), self.loader.lexical(c), None) for c in chosen]
        model = self.loader.model
        ids = model.token_ids([query])[0] if parts else []
        lexical = (v.lexical or hybrid.lexical_scores)(query, parts)
        if v.query_cosines is not None:
            cos = v.query_cosines(ids, parts, model.rows, lexical, query)
        else:
            cos = (v.cosines or service_cosines)(ids, parts, model.rows, lexical)
        weight = (v.weigh(query, parts) if v.weigh is not None
                  else v.weight if v.weight is not None else VECTOR_WEIGHT)
        with seams(weight, lexical, cos):
            found = hybrid.hybrid_list(query, parts, ids, model.rows, requirement)
        return v.listed(query, parts, found) if v.listed is not None else found


# --- packs and figures -------------------------------------------------------------------------


def pack(retrieval: LabRetrieval, ns: NamespaceAt, corpora: dict[str, Cached], q: Question,
         mode: str, budget: int) -> Pack:
    request = PackRequest(task=q.text, max_tokens=budget, collection_ids=(q.collection,),
                          sources=("passages",), retrieval=mode)
    scope = pack_scope(ns, request, None, lambda _: True)
    corpus = {c.name: corpora[c.name].corpus for c in scope.usable}
    return assemble(request, AS_OF, scope, corpus, retrieval,
                    PROCESS_MODEL.embedder.count, lambda _: True, lambda: False)


def ask(retrieval: LabRetrieval, ns: NamespaceAt, corpora: dict[str, Cached],
        questions: Sequence[Question], budgets: Sequence[int], modes: Sequence[str],
        before: Sequence[Asked] | None = None) -> list[Asked]:
    """Every question's packs in ``modes`` at ``budgets`` (added to ``before``'s when given:
    the other mode's packs, which a variant does not change)."""
    out = []
    for n, q in enumerate(questions):
        asked = Asked(q)
        if before is not None:
            old = before[n]
            for d in ("packs", "used", "seconds", "server", "absorbed"):
                getattr(asked, d).update(getattr(old, d))
            asked.bm25 = old.bm25
        for budget in budgets:
            for mode in modes:
                started = time.perf_counter()
                made = pack(retrieval, ns, corpora, q, mode, budget)
                took = time.perf_counter() - started
                key = (mode, budget)
                asked.packs[key] = [i.source.record_id for i in made.items
                                    if i.id.startswith("psg:")]
                asked.used[key] = made.used_tokens
                asked.seconds[key] = asked.server[key] = took
                asked.absorbed[key] = {a.rpartition("/")[2] for i in made.items
                                       for a in i.absorbed}
        out.append(asked)
    return out


@dataclass
class Run:
    """A variant's packs over both collections and its figures."""

    variant: Variant
    locomo: list[Asked]
    cranfield: list[Asked]
    seconds: float
    figures: dict[str, Any] = field(default_factory=dict)


def per_question(run: Run) -> dict[str, list[float]]:
    """Each question's figure for each measure of the table (hybrid)."""
    deep = LOCOMO_BUDGETS[-1]
    out: dict[str, list[float]] = {}
    for k in DEPTHS:
        out[f"r{k}"] = [recall(a.packs["hybrid", deep][:k], a.question.relevant)
                        for a in run.locomo]
    for budget in LOCOMO_BUDGETS[:2]:
        out[f"t{budget}"] = [recall(a.packs["hybrid", budget], a.question.relevant)
                             for a in run.locomo]
    out["ndcg10"] = [ndcg(a.packs["hybrid", CRANFIELD_BUDGET], a.question.relevant)
                     for a in run.cranfield]
    return out


def better_worse(run: Run, base: Run) -> dict[str, tuple[int, int]]:
    mine, theirs = per_question(run), per_question(base)
    return {m: (sum(a > b + 1e-12 for a, b in zip(mine[m], theirs[m], strict=True)),
                sum(a < b - 1e-12 for a, b in zip(mine[m], theirs[m], strict=True)))
            for m in mine}


def row(run: Run) -> str:
    """The variant's row, in the style of docs/retrieval-research.md's tables."""
    h, c = run.figures["locomo"]["hybrid"], run.figures["cranfield"]
    by = h["by_category_t2000"]
    return (f"| {run.variant.name} | {run.variant.constants} | "
            f"{h['r5']:.3f} / {h['r10']:.3f} / {h['r25']:.3f} | "
            f"{h['t2000']:.3f} ({h['tokens2000']:,.0f}) | {h['t1000']:.3f} | "
            f"{by['multi-hop']:.3f} / {by['open-domain']:.3f} | "
            f"{c['hybrid']['ndcg10']:.4f} ({c['ratio_hybrid_bm25']:.3f}x) |")


HEADER = ("| variant | constants | R@5 / R@10 / R@25 | @2,000 (tokens) | @1,000 | "
          "c1 / c3 @2,000 | Cranfield nDCG@10 (÷ BM25) |\n|---|---|---|---|---|---|---|")


# --- round 9's rules ---------------------------------------------------------------------------


class Vocabulary:
    """A collection's analyzer terms with a word vector each: the bundled model's rows of the
    term's most frequent surface word (its pieces' mean, unit length), and how many records
    hold the term. Computed once per collection."""

    def __init__(self, cached: Cached) -> None:
        f = cached.hybrid
        surfaces: dict[str, Counter[str]] = {}
        for p in cached.corpus.passages:
            r = p.record
            words = [w for w in tokenize(f"{r.title} {' '.join(r.keywords)} {r.text}")
                     if w not in STOP_WORDS]
            for word, stem in zip(words, stem_words(words), strict=True):
                surfaces.setdefault(stem, Counter())[word] += 1
        self.terms = f.term_names
        self.index = f.terms
        self.held = np.diff(f.posting_starts)
        self.records = len(f)
        words = [surfaces[t].most_common(1)[0][0] if t in surfaces else t for t in self.terms]
        self.pieces = [frozenset(ids) for ids in PROCESS_MODEL.token_ids(words)]
        self.raw = word_vectors(words)
        self.mean = self.raw.mean(axis=0)
        self.centred = unit_rows(self.raw - self.mean)
        self.features = f
        self.pooled = self.pooled_vectors(words)
        self._hubness: dict[tuple[bool, bool], Floats] = {}
        self._specific: dict[tuple[int, float, bool], dict[int, dict[int, float]]] = {}

    def vectors(self, centred: bool, pooled: bool = False) -> Floats:
        return self.pooled if pooled else self.centred if centred else self.raw

    def hubness(self, centred: bool, pooled: bool, k: int = 10) -> Floats:
        """Each term's mean cosine with its ``k`` nearest other terms (CSLS's r)."""
        key = (centred, pooled)
        if key not in self._hubness:
            vectors = self.vectors(centred, pooled)
            r = np.zeros(len(vectors), dtype=np.float64)
            for lo in range(0, len(vectors), 1024):
                sims = vectors[lo:lo + 1024] @ vectors.T
                top = -np.partition(-sims, k, axis=1)[:, 1:k + 1]  # the term itself left out
                r[lo:lo + 1024] = top.mean(axis=1)
            self._hubness[key] = r
        return self._hubness[key]

    def pooled_vectors(self, words: Sequence[str]) -> Floats:
        """Words pooled as rule 6 pools a query: pieces weighted by the collection's piece IDF,
        unit length, the collection's mean record vector subtracted, unit length."""
        rows = PROCESS_MODEL.rows.astype(np.float64)
        out = np.zeros((len(words), rows.shape[1]), dtype=np.float64)
        for i, ids in enumerate(PROCESS_MODEL.token_ids(list(words)) if words else []):
            if ids:
                pieces, counts = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
                out[i] = ((counts * self.features.piece_idf[pieces])[:, None]
                          * rows[pieces]).sum(axis=0)
        return unit_rows(unit_rows(out) - self.features.mean)

    def specific(self, m: int, t: float, centred: bool) -> dict[int, dict[int, float]]:
        """For each term, the terms that name it among their ``m`` nearest more general terms
        (held by more records) with cosine >= ``t``: a record-side expansion ("yoga" is indexed
        under "exercise" too) read from the query's side."""
        key = (m, t, centred)
        if key not in self._specific:
            vectors = self.vectors(centred)
            out: dict[int, dict[int, float]] = {}
            for lo in range(0, len(self.terms), 1024):
                sims = vectors[lo:lo + 1024] @ vectors.T
                general = self.held[None, :] > self.held[lo:lo + 1024, None]
                sims = np.where(general, sims, -np.inf)
                best = np.argsort(-sims, axis=1, kind="stable")[:, :m]
                for r, row in enumerate(best.tolist()):
                    for i in row:
                        if sims[r, i] >= t:
                            out.setdefault(i, {})[lo + r] = float(sims[r, i])
            self._specific[key] = out
        return self._specific[key]

    def query_vectors(self, words: Sequence[str], centred: bool,
                      pooled: bool = False) -> Floats:
        if pooled:
            return self.pooled_vectors(words)
        raw = word_vectors(words)
        return unit_rows(raw - self.mean) if centred else raw


def word_vectors(words: Sequence[str]) -> Floats:
    rows = PROCESS_MODEL.rows.astype(np.float64)
    ids = PROCESS_MODEL.token_ids(list(words)) if words else []
    out = np.zeros((len(words), rows.shape[1]), dtype=np.float64)
    for i, pieces in enumerate(ids):
        if pieces:
            out[i] = rows[pieces].mean(axis=0)
    return unit_rows(out)


_vocabularies: dict[int, Vocabulary] = {}


def vocabulary(features: HybridFeatures) -> Vocabulary:
    key = id(features)
    if key not in _vocabularies:
        _vocabularies[key] = Vocabulary(_built[key])
    return _vocabularies[key]


@dataclass(frozen=True)
class Neighbours:
    """Embedding-neighbour expansion: each query term's ``m`` nearest collection terms by word
    vector with cosine >= ``t`` (not a query term), weighted ``w`` x cosine x the query term's
    weight; ``where`` the pass(es) it is added to: first, feedback or both. Options: centred
    vectors, only terms held by at most ``share`` of the records, only terms rarer than the
    query term, only mutual neighbours (the query term among the neighbour's ``m`` nearest),
    only terms held by the first pass's first ``within`` hits (then added to feedback's pass
    only: the collection's context picks among the neighbours), only terms whose word shares
    no model piece with the query word (``disjoint``: the static
    vectors of words sharing a piece are close whatever they mean, "caroline" and "car").
    ``reverse``: instead, the terms that have the query term among their ``m`` nearest more
    general terms (``Vocabulary.specific``). ``pooled``: words pooled as rule 6 pools a query
    (the collection's piece IDF and mean) instead of their pieces' plain mean. ``csls``: the
    neighbours ranked by 2 cos - r(query word) - r(term), r a word's mean cosine with its 10
    nearest terms (hubness: a word near everything is nobody's neighbour), the cosine still
    held to ``t``."""

    m: int = 3
    t: float = 0.5
    within: int | None = None
    w: float = 0.3
    where: str = "both"
    centred: bool = False
    share: float | None = None
    rarer: bool = False
    mutual: bool = False
    disjoint: bool = False
    reverse: bool = False
    pooled: bool = False
    csls: bool = False

    def of(self, terms: dict[str, int], words: dict[str, str], parts: Sequence[Part],
           among: AbstractSet[str] | None = None) -> dict[str, dict[str, float]]:
        """Each query term's neighbours and their cosines (over the collection holding the
        most records: the benchmarks ask one collection at a time); only terms of ``among``
        when given."""
        if not parts or not terms:
            return {}
        voc = vocabulary(max(parts, key=lambda p: len(p.features)).features)
        vectors = voc.vectors(self.centred, self.pooled)
        sources = list(terms)
        queried = voc.query_vectors([words[t] for t in sources], self.centred, self.pooled)
        sims = queried @ vectors.T
        allowed = np.ones(len(voc.terms), dtype=np.bool_)
        if self.share is not None:
            allowed &= voc.held <= self.share * voc.records
        if among is not None:
            inside = np.zeros(len(voc.terms), dtype=np.bool_)
            inside[[voc.index[t] for t in among if t in voc.index]] = True
            allowed &= inside
        out: dict[str, dict[str, float]] = {}
        if self.reverse:
            named = voc.specific(self.m, self.t, self.centred)
            for source in sources:
                found = {voc.terms[j]: c for j, c in named.get(voc.index.get(source, -1),
                                                               {}).items()
                         if allowed[j] and voc.terms[j] not in terms}
                if found:
                    out[source] = found
            return out
        hub = voc.hubness(self.centred, self.pooled) if self.csls else None
        for i, source in enumerate(sources):
            s = np.where(allowed, sims[i], -np.inf)
            for t in terms:
                if t in voc.index:
                    s[voc.index[t]] = -np.inf
            if self.disjoint:
                own = frozenset(PROCESS_MODEL.token_ids([words[source]])[0])
                s[[j for j, p in enumerate(voc.pieces) if p & own]] = -np.inf
            if self.rarer and source in voc.index:
                s[voc.held >= voc.held[voc.index[source]]] = -np.inf
            rank = s
            if hub is not None:
                mine = -np.partition(-sims[i], 10)[:10].mean()
                rank = 2 * s - hub - mine
            best = np.argsort(-rank, kind="stable")[:self.m]
            chosen = {}
            for j in best.tolist():
                if s[j] < self.t:
                    if hub is None:
                        break
                    continue
                if self.mutual and not self._mutual(vectors, queried[i], j):
                    continue
                chosen[voc.terms[j]] = float(s[j])
            if chosen:
                out[source] = chosen
        return out

    def _mutual(self, vectors: Floats, query: Floats, j: int) -> bool:
        """Whether the query word is among term ``j``'s ``m`` nearest (itself left out)."""
        own = vectors @ vectors[j]
        own[j] = -np.inf
        kth = np.partition(own, -self.m)[-self.m] if len(own) > self.m else -np.inf
        return float(query @ vectors[j]) >= kth

    def rule(self) -> LexicalRule:
        def scores(query: str, parts: Sequence[Part]) -> list[Floats]:
            words = surface_words(query)
            terms = query_terms(query, stem_words)
            return expanded_lexical(terms, words, self, parts)
        return scores


def surface_words(query: str) -> dict[str, str]:
    """Each query term's first surface word in the query."""
    words = [w for w in tokenize(query) if w not in STOP_WORDS]
    out: dict[str, str] = {}
    for word, stem in zip(words, stem_words(words), strict=True):
        out.setdefault(stem, word)
    return out


def expanded_lexical(terms: dict[str, int], words: dict[str, str], rule: Neighbours,
                     parts: Sequence[Part]) -> list[Floats]:
    """``hybrid.lexical_scores`` (rules 2-5, the service's functions in its order) with the
    neighbours added to the first pass, feedback's pass or both. An added term that is not a
    query term is scored only where feedback's common-term rule allows."""
    def added(base: dict[str, float], weight_of: Callable[[str], float]) -> dict[str, float]:
        out = dict(base)
        for source, found in near.items():
            for t, cos in found.items():
                out[t] = out.get(t, 0.0) + rule.w * cos * weight_of(source)
        return out

    near = rule.of(terms, words, parts) if rule.within is None else {}
    extra = {t for found in near.values() for t in found}
    first_query: dict[str, float] = dict(terms)
    if rule.within is None and rule.where in ("first", "both"):
        first_query = added(first_query, lambda s: terms[s])
    first = bm25(first_query, parts, extra - terms.keys())
    matched = sum(int(np.count_nonzero(s > 0)) for s in first)
    hits = _first_hits(first, parts, FEEDBACK_HITS) if informative(matched) else []
    scores = first
    if hits:
        bags = [(score, parts[at].features.bag(row)) for score, at, row in hits]
        weighted = feedback_query(terms, expansion(bags))
        if rule.within is not None:
            among = {t for _, at, row in _first_hits(first, parts, rule.within)
                     for t in parts[at].features.bag(row)}
            near = rule.of(terms, words, parts, among)
        if rule.where in ("feedback", "both") or rule.within is not None:
            length = sum(terms.values())
            weighted = added(weighted, lambda s: ORIGINAL_WEIGHT * terms[s] / length)
        scores = bm25(weighted, parts, weighted.keys() - terms.keys())
    return [in_documents(s, part.features) for s, part in zip(scores, parts, strict=True)]


@dataclass(frozen=True)
class DenseFeedback:
    """Dense pseudo-relevance feedback (Rocchio on the vectors): each collection's query
    vector becomes grid(unit(q + beta x the mean vector of the first k records)), the first k
    by lexical score (``by="lexical"``) or by the fused score with the service's cosines
    (``by="fused"``); the cosines are then recomputed."""

    k: int = 5
    beta: float = 0.5
    by: str = "lexical"
    weight: float = VECTOR_WEIGHT

    def rule(self) -> CosineRule:
        def cosines(ids: Sequence[int], parts: Sequence[Part], matrix: Matrix,
                    lexical: list[Floats]) -> list[Floats]:
            query = QueryPieces(ids, matrix)
            vectors = [p.features.pooled_query(query) for p in parts]
            cos = [(p.features.vectors @ q).astype(np.float64)
                   for p, q in zip(parts, vectors, strict=True)]
            key = lexical if self.by == "lexical" else fused(lexical, cos, self.weight)
            top = first_rows(key, parts, self.k)
            if not top:
                return cos
            mean = np.mean([parts[at].features.vectors[row].astype(np.float64)
                            for at, row in top], axis=0)
            out = []
            for p, q in zip(parts, vectors, strict=True):
                moved = on_grid(unit_rows((q.astype(np.float64) + self.beta * mean)[None, :]))[0]
                out.append((p.features.vectors @ moved).astype(np.float64))
            return out
        return cosines


def fused(lexical: list[Floats], cos: list[Floats], weight: float) -> list[Floats]:
    """Rule 7's fused scores (unrounded) over every collection."""
    units = [np.rint(c / COSINE_UNIT).astype(np.int64) for c in cos]
    mean, deviation = moments(sum(len(u) for u in units), sum(int(u.sum()) for u in units),
                              sum(int(np.dot(u, u)) for u in units))
    top = max((float(s.max()) for s in lexical if len(s)), default=0.0)
    out = []
    for s, c in zip(lexical, cos, strict=True):
        share = s / top if top > 0 else np.zeros(len(s))
        out.append(share + weight * (c - mean) / (SPREAD * deviation) if deviation > 0
                   else share)
    return out


def first_rows(scores: list[Floats], parts: Sequence[Part], k: int) -> list[tuple[int, int]]:
    """The first ``k`` positive (part, row), by score, collection, record id."""
    return [(at, row) for _, at, row in _first_hits(scores, parts, k)]


@dataclass(frozen=True)
class AdaptiveWeight:
    """Rule 7's vector weight per query: ``w0 + lam x (1 - rho)``, rho how well the best
    record matches the query lexically, the first BM25 pass's top score over the score of a
    record holding every query term once at the average length (the sum of count x IDF),
    capped at 1. Where no record holds the query's words (a general word in the question, a
    specific one in the evidence) the vectors weigh more."""

    w0: float = VECTOR_WEIGHT
    lam: float = 0.2

    def rule(self) -> WeightRule:
        def weigh(query: str, parts: Sequence[Part]) -> float:
            terms = query_terms(query, stem_words)
            n = sum(len(p.features) for p in parts)
            if not n or not terms:
                return self.w0
            held = np.zeros(len(terms), dtype=np.int64)
            for p in parts:
                lo, hi = p.features.spans(list(terms))
                held += hi - lo
            ideal = sum(c * idf(n, max(int(h), 1)) for c, h in zip(terms.values(), held,
                                                                    strict=True))
            top = max((float(s.max()) for s in bm25(dict(terms), parts) if len(s)),
                      default=0.0)
            rho = min(1.0, top / ideal) if ideal > 0 else 1.0
            return self.w0 + self.lam * (1 - rho)
        return weigh


def adaptive_weight_grid() -> list[Variant]:
    return [Variant("vector weight by lexical match", f"w0 {w0}, lam {lam}",
                    weigh=AdaptiveWeight(w0, lam).rule())
            for w0 in (0.3, 0.35) for lam in (0.1, 0.2, 0.35, 0.5, 0.8)]


def neighbours_grid() -> list[Variant]:
    out = []
    for m, t, w in ((1, 0.6, 0.3), (3, 0.5, 0.3), (3, 0.5, 0.5), (5, 0.4, 0.3), (3, 0.6, 0.5),
                    (5, 0.5, 0.2), (2, 0.7, 0.5)):
        for where in ("first", "feedback", "both"):
            rule = Neighbours(m=m, t=t, w=w, where=where)
            out.append(Variant("embedding neighbours", f"m {m}, t {t}, w {w}, {where}",
                               lexical=rule.rule()))
    return out


def neighbours_options_grid() -> list[Variant]:
    out = []
    for m, t, w in ((3, 0.5, 0.3), (5, 0.4, 0.3), (3, 0.4, 0.5)):
        for where in ("first", "both"):
            for label, extra in (("centred", {"centred": True}),
                                 ("held by <= 5 %", {"share": 0.05}),
                                 ("held by <= 1 %", {"share": 0.01}),
                                 ("rarer", {"rarer": True}),
                                 ("mutual", {"mutual": True}),
                                 ("disjoint pieces", {"disjoint": True}),
                                 ("pooled as rule 6", {"pooled": True}),
                                 ("pooled as rule 6, <= 5 %", {"pooled": True, "share": 0.05}),
                                 ("disjoint pieces, <= 5 %", {"disjoint": True, "share": 0.05}),
                                 ("centred, <= 5 %, mutual",
                                  {"centred": True, "share": 0.05, "mutual": True})):
                rule = Neighbours(m=m, t=t, w=w, where=where, **extra)
                out.append(Variant(f"embedding neighbours, {label}",
                                   f"m {m}, t {t}, w {w}, {where}", lexical=rule.rule()))
    return out


def specific_terms_grid() -> list[Variant]:
    out = []
    for m, t, w in ((3, 0.4, 0.3), (3, 0.5, 0.3), (5, 0.4, 0.3), (3, 0.4, 0.5), (1, 0.4, 0.5),
                    (3, 0.3, 0.3)):
        for where in ("first", "feedback", "both"):
            rule = Neighbours(m=m, t=t, w=w, where=where, reverse=True)
            out.append(Variant("more specific terms (reverse neighbours)",
                               f"m {m}, t {t}, w {w}, {where}", lexical=rule.rule()))
    return out


def neighbours_in_hits_grid() -> list[Variant]:
    out = []
    for within in (5, 10, 20):
        for m, t, w in ((3, 0.3, 0.3), (3, 0.4, 0.5), (5, 0.3, 0.3), (2, 0.5, 0.5),
                        (3, 0.3, 1.0)):
            rule = Neighbours(m=m, t=t, w=w, where="feedback", within=within)
            out.append(Variant("embedding neighbours among the first hits' terms",
                               f"{within} hits, m {m}, t {t}, w {w}", lexical=rule.rule()))
    return out


def dense_feedback_grid() -> list[Variant]:
    out = []
    for by in ("lexical", "fused"):
        for k in (3, 5, 10):
            for beta in (0.3, 0.5, 0.7, 1.0):
                rule = DenseFeedback(k=k, beta=beta, by=by)
                out.append(Variant(f"dense feedback, first k by {by}",
                                   f"k {k}, beta {beta}", cosines=rule.rule()))
    return out


def neighbours_csls_grid() -> list[Variant]:
    out = []
    for m, t, w in ((1, 0.5, 0.3), (3, 0.4, 0.3), (3, 0.5, 0.5)):
        for where in ("first", "feedback", "both"):
            rule = Neighbours(m=m, t=t, w=w, where=where, csls=True)
            out.append(Variant("embedding neighbours by CSLS", f"m {m}, t {t}, w {w}, {where}",
                               lexical=rule.rule()))
    return out


def combinations_grid() -> list[Variant]:
    """The best of the expansion and of dense feedback, alone and together, with rule 7's
    weight around 0.35."""
    lexical = Neighbours(m=1, t=0.6, w=0.3, where="feedback")
    out = []
    for w in (0.3, 0.35, 0.4, 0.45):
        dense = DenseFeedback(k=3, beta=0.3, by="fused", weight=w)
        out.append(Variant("neighbours (m 1, t 0.6, w 0.3, feedback) + weight", f"w {w}",
                           lexical=lexical.rule(), weight=w))
        out.append(Variant("dense feedback (fused, k 3, beta 0.3) + weight", f"w {w}",
                           cosines=dense.rule(), weight=w))
        out.append(Variant("neighbours + dense feedback + weight", f"w {w}",
                           lexical=lexical.rule(), cosines=dense.rule(), weight=w))
    return out


def weight_grid() -> list[Variant]:
    return [Variant("vector weight", f"w {w}", weight=w) for w in (0.25, 0.3, 0.4, 0.45)]


def seams_check() -> list[Variant]:
    """Variants that change nothing through each seam: each row must equal the baseline's."""
    return [Variant("check: the service's rules through the seams",
                    lexical=hybrid.lexical_scores, cosines=service_cosines),
            Variant("check: expansion without neighbours", "m 0",
                    lexical=Neighbours(m=0).rule()),
            Variant("check: dense feedback from no records", "k 0",
                    cosines=DenseFeedback(k=0).rule()),
            Variant("check: the service's vector weight", f"w {VECTOR_WEIGHT}",
                    weight=VECTOR_WEIGHT),
            Variant("check: rule 6 given the query, the list unchanged, the floor's constants",
                    query_cosines=lambda ids, parts, matrix, _lexical, _query:
                    hybrid.cosines(ids, parts, matrix),
                    listed=lambda _query, _parts, found: found,
                    floor=(LEXICAL_FLOOR, FLOOR_DEPTH))]


# --- grids -------------------------------------------------------------------------------------

ENCODER_WEIGHTS = (0.35, 0.45, 0.55, 0.7)


def encoder_cosine_grid() -> list[Variant]:
    out = []
    for label, rule in (("", encoded.EncoderCosine()),
                        (", centred", encoded.EncoderCosine(centred=True)),
                        (", with rule 6b's neighbours", encoded.EncoderCosine(context=True))):
        for w in ENCODER_WEIGHTS:
            out.append(Variant(f"encoder cosine in place of rule 6{label}", f"w {w}",
                               query_cosines=rule.rule(), weight=w))
    return out


def encoder_third_grid() -> list[Variant]:
    out = []
    for w6, we in ((0.35, 0.2), (0.35, 0.35), (0.35, 0.5), (0.35, 0.7), (0.2, 0.5),
                   (0.2, 0.7), (0.5, 0.5)):
        third = encoded.ThirdList(w6, we)
        out.append(Variant("encoder as a third list", f"w6 {w6}, wE {we}",
                           query_cosines=third.cosines, weigh=third.weigh))
    return out


def encoder_rerank_grid() -> list[Variant]:
    out = []
    for depth in (50, 100):
        for lam in (0.35, 0.7, 1.5, None):
            label = "encoder alone" if lam is None else f"lam {lam}"
            out.append(Variant("encoder re-ranks the hybrid list's first N",
                               f"N {depth}, {label}", listed=encoded.Rerank(depth, lam).rule()))
    return out


def no_lexical(_query: str, parts: Sequence[Part]) -> list[Floats]:
    return [np.zeros(len(p.features), dtype=np.float64) for p in parts]


def vectors_alone_grid() -> list[Variant]:
    """Each side's vectors alone (no lexical score: the list is the records at least one
    deviation above the mean cosine, by cosine; no floor), against the dense anchor."""
    return [Variant("encoder alone (no lexical rules)", "",
                    lexical=no_lexical, query_cosines=encoded.EncoderCosine().rule(),
                    weight=3.0),
            Variant("rule 6 alone (no lexical rules)", "", lexical=no_lexical, weight=3.0)]


def encoder_third_fine_grid() -> list[Variant]:
    out = []
    for w6, we in ((0.35, 0.3), (0.35, 0.4), (0.35, 0.45), (0.3, 0.4), (0.4, 0.4),
                   (0.3, 0.3), (0.4, 0.3)):
        third = encoded.ThirdList(w6, we)
        out.append(Variant("encoder as a third list", f"w6 {w6}, wE {we}",
                           query_cosines=third.cosines, weigh=third.weigh))
    for w6, we in ((0.35, 0.35), (0.35, 0.5)):
        for f, d in ((0.35, 10), (0.55, 10), (0.45, 20)):
            third = encoded.ThirdList(w6, we)
            out.append(Variant("encoder as a third list, floor", f"w6 {w6}, wE {we}, "
                               f"floor {f}, depth {d}", query_cosines=third.cosines,
                               weigh=third.weigh, floor=(f, d)))
    return out


@dataclass(frozen=True)
class InformativeCosines:
    """Rule 4b's information factor on the vector side: a record's cosine deviation from the
    request's mean times factor^gamma (short, uninformative turns of related documents, whose
    pooled vectors are a few pieces, move less; informative ones more); ``above``: only
    deviations above the mean are scaled."""

    gamma: float = 1.0
    above: bool = False

    def rule(self) -> CosineRule:
        def cosines(ids: Sequence[int], parts: Sequence[Part], matrix: Matrix,
                    _lexical: list[Floats]) -> list[Floats]:
            cos = hybrid.cosines(ids, parts, matrix)
            n = sum(len(c) for c in cos)
            mean = sum(float(c.sum()) for c in cos) / n if n else 0.0
            out = []
            for c, p in zip(cos, parts, strict=True):
                scale = p.features.factor ** self.gamma
                if self.above:
                    scale = np.where(c > mean, scale, 1.0)
                out.append(mean + (c - mean) * scale)
            return out
        return cosines


def informative_cosines_grid() -> list[Variant]:
    return [Variant("rule 4b's factor on the cosine's deviation", f"gamma {g}"
                    + (", above the mean only" if above else ""),
                    cosines=InformativeCosines(g, above).rule())
            for above in (False, True) for g in (0.5, 1.0, 2.0)]


def linked_floor_grid() -> list[Variant]:
    """Round 9's neighbours (the two that did not lose at depth) with the floor read before
    rules 4-5, so the turns they link can enter the pack."""
    out = []
    lexical = Neighbours(m=1, t=0.6, w=0.3, where="feedback").rule()
    linked = Neighbours(m=5, t=0.4, w=0.3, where="first", share=0.01).rule()
    for label, rule in (("m 1, t 0.6, w 0.3, feedback", lexical),
                        ("m 5, t 0.4, w 0.3, first, <= 1 %", linked)):
        out.append(Variant(f"round 9's neighbours ({label}), served floor",
                           "floor 0.35, depth 10", lexical=rule, floor=(0.35, 10)))
        for mix, f in (("own", 0.35), ("own", 0.25), ("max", 0.45)):
            out.append(Variant(f"round 9's neighbours ({label}), floor before rules 4-5 ({mix})",
                               f"floor {f}, depth 10", lexical=rule,
                               listed=encoded.FloorBeforeRules(mix).rule(), floor=(f, 10)))
    return out


def floor_grid() -> list[Variant]:
    out = [Variant("served share, floor", f"floor {f}, depth {d}", floor=(f, d))
           for f, d in ((0.35, 10), (0.55, 10), (0.45, 20))]
    for mix in ("own", "max"):
        for f, d in ((0.45, 10), (0.35, 10), (0.25, 10), (0.55, 10), (0.45, 20), (0.35, 20)):
            out.append(Variant(f"floor on the share before rules 4-5 ({mix})",
                               f"floor {f}, depth {d}",
                               listed=encoded.FloorBeforeRules(mix).rule(), floor=(f, d)))
    return out


GRIDS: dict[str, Callable[[], list[Variant]]] = {
    "check": seams_check,
    "neighbours": neighbours_grid,
    "neighbours-options": neighbours_options_grid,
    "neighbours-in-hits": neighbours_in_hits_grid,
    "specific-terms": specific_terms_grid,
    "dense-feedback": dense_feedback_grid,
    "weight": weight_grid,
    "neighbours-csls": neighbours_csls_grid,
    "combinations": combinations_grid,
    "adaptive-weight": adaptive_weight_grid,
    "encoder-cosine": encoder_cosine_grid,
    "encoder-third": encoder_third_grid,
    "encoder-rerank": encoder_rerank_grid,
    "floor": floor_grid,
    "vectors-alone": vectors_alone_grid,
    "encoder-third-fine": encoder_third_fine_grid,
    "informative-cosines": informative_cosines_grid,
    "linked-floor": linked_floor_grid,
}


# --- main --------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, default=LOCOMO_DEFAULT)
    parser.add_argument("--cranfield", type=Path, default=CRANFIELD_DEFAULT)
    parser.add_argument("--limit-questions", type=int, default=None, metavar="N")
    parser.add_argument("--variants", default="", help="grids to run, by name, comma-separated")
    parser.add_argument("--list", action="store_true", help="list the grids and stop")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="write every row's figures and counts here")
    parser.add_argument("--per-question", type=Path, default=None, metavar="PATH",
                        help="write every row's figures per question here (for checks on "
                             "parts of the collections, such as split halves)")
    parser.add_argument("--encoder", type=Path, default=None, metavar="VECTORS.npz",
                        help="a sentence encoder's vectors for the encoder grids "
                             "(bench.retrieval_lab_encoder says how they are made)")
    args = parser.parse_args()
    if args.encoder is not None:
        encoded.ENCODER.append(encoded.EncoderVectors(args.encoder))
    if args.list:
        for name, grid in GRIDS.items():
            print(f"{name}: {len(grid())} variants")
        return 0
    names = [n for n in args.variants.split(",") if n]
    unknown = [n for n in names if n not in GRIDS]
    if unknown:
        raise SystemExit(f"unknown grid(s) {unknown}: one of {sorted(GRIDS)}")
    started = time.perf_counter()
    locomo = load_locomo(args.locomo)
    cranfield = load_cranfield(args.cranfield)
    collections = locomo.collections + cranfield.collections
    locomo_q = limited(locomo.questions, args.limit_questions)
    cran_q = evenly(cranfield.questions, args.limit_questions)
    corpora = build(collections)
    retrieval = LabRetrieval(HeldCorpora(list(corpora.values())))
    ns = namespace(collections)
    costs = token_costs(locomo.collections)
    plain = {c.name: Bm25(c.records) for c in collections}
    print(f"built {sum(len(c.records) for c in collections):,} records in "
          f"{len(collections)} collections in {time.perf_counter() - started:.1f}s", flush=True)

    def measure(variant: Variant, base: Run | None) -> Run:
        at = time.perf_counter()
        retrieval.use(variant)
        modes = MODES if base is None else ("hybrid",)
        with floor_constants(variant.floor):
            lo = ask(retrieval, ns, corpora, locomo_q, LOCOMO_BUDGETS, modes,
                     base.locomo if base else None)
            cr = ask(retrieval, ns, corpora, cran_q, (CRANFIELD_BUDGET,), modes,
                     base.cranfield if base else None)
        if base is None:
            for a in lo + cr:
                a.bm25 = plain[a.question.collection].ranked(a.question.text)
        run = Run(variant, lo, cr, time.perf_counter() - at)
        run.figures = {"locomo": locomo_figures(lo, costs), "cranfield": cranfield_figures(cr)}
        return run

    base = measure(BASELINE, None)
    served.print_locomo(base.figures["locomo"])
    served.print_cranfield(base.figures["cranfield"])
    print(f"(latencies above are in-process; baseline measured in {base.seconds:.0f}s)\n")
    print(HEADER)
    print(row(base), flush=True)
    rows: list[dict[str, Any]] = [summary(base, None)]
    each: list[dict[str, Any]] = [questions_of(base, with_bm25=True)]
    for name in names:
        for variant in GRIDS[name]():
            run = measure(variant, base)
            counts = better_worse(run, base)
            print(row(run) + "  " + " ".join(f"{m} +{b}/-{w}" for m, (b, w) in counts.items())
                  + f"  ({run.seconds:.0f}s)", flush=True)
            rows.append(summary(run, counts))
            each.append(questions_of(run))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    if args.per_question:
        args.per_question.write_text(json.dumps(each), encoding="utf-8")
    print(f"\nwhole run {time.perf_counter() - started:.0f}s")
    retrieval.close()
    return 0


def questions_of(run: Run, with_bm25: bool = False) -> dict[str, Any]:
    """A row's figures question by question (``per_question``'s measures, the tokens packed at
    2,000 and, for the baseline, BM25's nDCG@10), with each question's collection, category
    and text, so that any part of the collections (a split half) can be scored alone."""
    out: dict[str, Any] = {
        "variant": run.variant.name, "constants": run.variant.constants,
        "figures": per_question(run),
        "tokens2000": [a.used["hybrid", 2000] for a in run.locomo],
        "locomo": [[a.question.collection, a.question.category, a.question.text]
                   for a in run.locomo],
        "cranfield": [a.question.text for a in run.cranfield]}
    if with_bm25:
        out["bm25_ndcg10"] = [ndcg(a.bm25, a.question.relevant) for a in run.cranfield]
    return out


def summary(run: Run, counts: dict[str, tuple[int, int]] | None) -> dict[str, Any]:
    h, c = run.figures["locomo"]["hybrid"], run.figures["cranfield"]
    out: dict[str, Any] = {
        "variant": run.variant.name, "constants": run.variant.constants,
        **{k: h[k] for k in ("r5", "r10", "r25", "t2000", "tokens2000", "t1000", "tokens1000")},
        "by_category_t2000": h["by_category_t2000"], "ndcg10": c["hybrid"]["ndcg10"],
        "ratio": c["ratio_hybrid_bm25"], "seconds": run.seconds}
    if counts is not None:
        out["better_worse"] = counts
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in out.items()}


if __name__ == "__main__":
    sys.exit(main())
