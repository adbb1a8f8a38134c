"""Ranked lists (§7.5) and the deduplicating walk over them (§7.8).

A ranked list orders candidates by tier (0: in force at T), score descending (millionths),
collection, record id. The walk visits the requirement lists in set order, then the task
list, and absorbs each passage whose text duplicates a candidate kept earlier."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple

from context_service.domain.pack.model import Corpus, Passage, Scored
from context_service.domain.pack.records import Judge
from context_service.domain.pack.text import Shingle, shingles_of
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


def _prefix(mine: frozenset[Shingle]) -> list[int]:
    """The prefix-filter signature of a shingle set for Jaccard >= 4/5, as shingle hashes.

    Two sets with J >= 4/5 share at least ceil(4/5 max(|A|, |B|)) shingles, so, with shingles
    ordered by hash, the first |A| - ceil(4|A|/5) + 1 of A and the first |B| - ceil(4|B|/5) + 1
    of B contain the hash of their shared shingle of least hash (the prefix takes every shingle
    whose hash is at most the last one's, so hash ties cannot hide it). Candidates the filter
    finds are then compared exactly, shingle by shingle."""
    hashes = sorted(map(hash, mine))
    last = hashes[len(hashes) - (4 * len(hashes) + 4) // 5]
    return [h for h in hashes if h <= last]


def rrf_micros(ranks: Sequence[int]) -> int:
    """The sum of 1 / (60 + rank) over the lists, in millionths, rounded exactly, ties to even."""
    total = Fraction(0)
    for rank in ranks:
        total += Fraction(1, RRF_K + rank)
    return to_micros(total)


class Walk:
    """Candidates in walk order (first encounter), with deduplication as they are met."""

    def __init__(self) -> None:
        self.order: list[Candidate] = []  # every candidate, first encounter, absorbed included
        self.seen: set[str] = set()
        self.keeper_of: dict[str, str] = {}  # absorbed ref -> keeper ref
        self.absorbed: dict[str, list[str]] = {}  # keeper ref -> absorbed refs, in order
        self.duplicates: list[str] = []  # absorbed refs, in order
        self._kept: list[tuple[str, frozenset[Shingle]]] = []
        self._by_sha: dict[bytes, int] = {}
        self._by_prefix: dict[int, list[int]] = {}

    def visit(self, candidates: Sequence[Candidate]) -> None:
        for c in candidates:
            ref = c.ref
            if ref in self.seen:
                continue
            self.seen.add(ref)
            self.order.append(c)
            self._dedup(c, ref)

    def is_absorbed(self, ref: str) -> bool:
        return ref in self.keeper_of

    def _dedup(self, c: Candidate, ref: str) -> None:
        tokens = tokenize(c.passage.record.text)
        sha = hashlib.sha256(" ".join(tokens).encode()).digest()
        mine = shingles_of(tokens)
        prefix = _prefix(mine)
        keeper = self._by_sha.get(sha)
        probed: set[int] = set()
        for s in prefix:
            probed.update(self._by_prefix.get(s, ()))
        for k in probed:  # Jaccard >= 4/5, exactly
            if keeper is not None and k >= keeper:
                continue
            other = self._kept[k][1]
            shared = len(mine & other)
            if 5 * shared >= 4 * (len(mine) + len(other) - shared):
                keeper = k
        if keeper is not None:
            keeper_ref = self._kept[keeper][0]
            self.keeper_of[ref] = keeper_ref
            self.absorbed.setdefault(keeper_ref, []).append(ref)
            self.duplicates.append(ref)
            return
        index = len(self._kept)
        self._kept.append((ref, mine))
        self._by_sha.setdefault(sha, index)
        for s in prefix:
            self._by_prefix.setdefault(s, []).append(index)
