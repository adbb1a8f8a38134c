"""Ranked lists (§7.5) and the deduplicating walk over them (§7.8).

A ranked list orders candidates by tier (0: in force at T), score descending (millionths),
collection, record id. The walk visits the requirement lists in set order, then the task
list, and absorbs each passage whose text duplicates a candidate kept earlier."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

from context_service.domain.pack.model import Corpus, Passage, Scored
from context_service.domain.pack.records import Judge
from context_service.domain.pack.text import Shingle, may_be_near, shingles
from context_service.domain.query.tokenizer import tokenize
from context_service.domain.score import to_micros

RRF_K = 60


class Candidate(NamedTuple):
    passage: Passage
    score: int  # millionths
    tier: int

    @property
    def ref(self) -> str:
        return self.passage.ref


def _lookup(corpus: Corpus, s: Scored) -> Passage | None:
    c = corpus.get(s.collection)
    return c.by_id.get(s.record_id) if c is not None else None


def shares_token(p: Passage, query_tokens: frozenset[str]) -> bool:
    """Whether the record's BM25 for a query with these tokens is positive."""
    r = p.record
    return not query_tokens.isdisjoint(
        (*tokenize(r.title), *tokenize(" ".join(r.keywords)), *tokenize(r.text)))


def ranked(corpus: Corpus, judge: Judge, lexical: Sequence[Scored],
           vector: Sequence[Scored] | None, lexical_only_for: str | None = None) -> list[Candidate]:
    """The ranked list from the retrieval lists. ``vector`` None: lexical mode (score = BM25);
    otherwise reciprocal rank fusion of both. ``lexical_only_for`` is a requirement's query:
    only records with BM25 > 0 for it are candidates."""
    scores: dict[str, tuple[Passage, int]] = {}
    if vector is None:
        for s in lexical:
            p = _lookup(corpus, s)
            if p is not None:
                scores[p.ref] = (p, to_micros(s.score))
    else:
        fused: dict[str, tuple[Passage, list[int]]] = {}
        for results in (lexical, vector):
            for rank, s in enumerate(results, start=1):
                p = _lookup(corpus, s)
                if p is None:
                    continue
                entry = fused.setdefault(p.ref, (p, []))
                entry[1].append(rank)
        in_lexical = {f"{s.collection}/{s.record_id}" for s in lexical}
        tokens = frozenset(tokenize(lexical_only_for)) if lexical_only_for is not None else None
        for ref, (p, ranks) in fused.items():
            if tokens is not None and ref not in in_lexical and not shares_token(p, tokens):
                continue
            scores[ref] = (p, rrf_micros(ranks))
    out = [Candidate(p, score, 0 if judge.in_force(p) else 1) for p, score in scores.values()]
    out.sort(key=lambda c: (c.tier, -c.score, c.passage.collection, c.passage.record.id))
    return out


def rrf_micros(ranks: Sequence[int]) -> int:
    """The sum of 1 / (60 + rank) over the lists, in millionths, rounded exactly, ties to even."""
    return _rrf_micros(tuple(ranks))


@lru_cache(maxsize=65_536)  # ranks are at most 200 in each of two lists: about 40,000 keys
def _rrf_micros(ranks: tuple[int, ...]) -> int:
    total = Fraction(0)
    for rank in ranks:
        total += Fraction(1, RRF_K + rank)
    return to_micros(total)


class Walk:
    """Candidates in walk order (first encounter), with deduplication as they are met.

    Exact duplicates have equal shingle sets, so the near-duplicate test finds them too."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.order: list[Candidate] = []  # every candidate, first encounter, absorbed included
        self.seen: set[str] = set()
        self.keeper_of: dict[str, str] = {}  # absorbed ref -> keeper ref
        self.absorbed: dict[str, list[str]] = {}  # keeper ref -> absorbed refs, in order
        self.duplicates: list[str] = []  # absorbed refs, in order
        self._kept: list[tuple[str, Passage, int]] = []  # ref, passage, shingle count
        self._shingles: dict[int, frozenset[Shingle]] = {}  # kept index -> shingles
        self._hashes: dict[int, set[int]] = {}  # kept index -> its shingles' hashes
        self._by_prefix: dict[int, list[int]] = {}

    def visit(self, candidates: Sequence[Candidate]) -> None:
        for c in candidates:
            ref = c.ref
            if ref in self.seen:
                continue
            self.seen.add(ref)
            self.order.append(c)
            self._dedup(c.passage, ref)

    def is_absorbed(self, ref: str) -> bool:
        return ref in self.keeper_of

    def _kept_shingles(self, k: int) -> frozenset[Shingle]:
        found = self._shingles.get(k)
        if found is None:
            found = self._shingles[k] = shingles(self._kept[k][1].record.text)
        return found

    def _kept_hashes(self, k: int) -> set[int]:
        found = self._hashes.get(k)
        if found is None:
            p = self._kept[k][1]
            found = self._hashes[k] = set(self.corpus[p.collection].signature(
                p.record.id).hashes)
        return found

    def _dedup(self, p: Passage, ref: str) -> None:
        sig = self.corpus[p.collection].signature(p.record.id)
        size = sig.size
        by_prefix = self._by_prefix
        kept = self._kept
        probed: set[int] = set()
        for h in sig.prefix:
            found = by_prefix.get(h)
            if found is not None:
                probed.update(found)
        keeper: int | None = None
        # sets whose sizes rule out Jaccard >= 4/5 are never compared
        near = sorted(k for k in probed if may_be_near(size, kept[k][2]))
        if near:
            mine_hashes = set(sig.hashes)
            mine: frozenset[Shingle] | None = None
            for k in near:  # the earliest kept candidate that is a near duplicate
                other_size = kept[k][2]
                if sig.injective:  # shared hashes >= shared shingles: a "no" here is exact
                    hashed = len(mine_hashes & self._kept_hashes(k))
                    if 5 * hashed < 4 * (size + other_size - hashed):
                        continue
                if mine is None:
                    mine = shingles(p.record.text)
                other = self._kept_shingles(k)
                shared = len(mine & other)
                if 5 * shared >= 4 * (len(mine) + len(other) - shared):  # Jaccard >= 4/5
                    keeper = k
                    break
        if keeper is not None:
            keeper_ref = self._kept[keeper][0]
            self.keeper_of[ref] = keeper_ref
            self.absorbed.setdefault(keeper_ref, []).append(ref)
            self.duplicates.append(ref)
            return
        index = len(self._kept)
        self._kept.append((ref, p, size))
        for h in sig.prefix:
            by_prefix.setdefault(h, []).append(index)
