"""Ranked lists (§7.5) and the deduplicating walk over them (§7.8).

A ranked list orders candidates by tier (0: in force at T), score descending (millionths),
collection, record id. The walk visits the requirement lists in set order, then the task
list, and absorbs each passage whose text duplicates a candidate kept earlier."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from itertools import chain, repeat
from typing import NamedTuple

from context_service.domain.pack.model import Corpus, Passage, Scored
from context_service.domain.pack.records import Judge
from context_service.domain.pack.text import (
    Signature,
    may_be_near,
    near_keys,
    shares_enough,
    shingle_keys,
)
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
        tokens = frozenset(tokenize(lexical_only_for)) if lexical_only_for is not None else None
        in_lexical = ({f"{s.collection}/{s.record_id}" for s in lexical} if tokens is not None
                      else set())
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

    Exact duplicates have equal shingle sets, so the near-duplicate test finds them too. A
    candidate is compared only with the kept candidates whose prefix signatures share a hash
    with its own, and each such pair passes two exact filters before its shingle sets are
    compared: the sizes, and the count of shared prefix hashes (``_may_share_enough``). The
    sets compared are ``text.shingle_keys`` (exact: slices of the texts' token ids)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self.order: list[Candidate] = []  # every candidate, first encounter, absorbed included
        self.seen: set[str] = set()
        self.keeper_of: dict[str, str] = {}  # absorbed ref -> keeper ref
        self.absorbed: dict[str, list[str]] = {}  # keeper ref -> absorbed refs, in order
        self.duplicates: list[str] = []  # absorbed refs, in order
        self._kept: list[tuple[Passage, Signature]] = []
        self._shingles: dict[int, frozenset[bytes]] = {}  # kept index -> its shingle keys
        self._by_prefix: defaultdict[int, list[int]] = defaultdict(list)

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

    def _kept_shingles(self, k: int) -> frozenset[bytes]:
        found = self._shingles.get(k)
        if found is None:
            found = self._shingles[k] = shingle_keys(self._kept[k][1].keys)
        return found

    def _dedup(self, p: Passage, ref: str) -> None:
        sig = self.corpus[p.collection].signature(p.record.id)
        by_prefix = self._by_prefix
        # kept index -> how many of this prefix's hashes its prefix holds
        shared = Counter(chain.from_iterable(map(by_prefix.get, sig.prefix, repeat(()))))
        keeper = self._keeper(sig, shared) if shared else None
        if keeper is not None:
            keeper_ref = self._kept[keeper][0].ref
            self.keeper_of[ref] = keeper_ref
            self.absorbed.setdefault(keeper_ref, []).append(ref)
            self.duplicates.append(ref)
            return
        index = len(self._kept)
        self._kept.append((p, sig))
        for h in sig.prefix:
            by_prefix[h].append(index)

    def _keeper(self, sig: Signature, shared: Counter[int]) -> int | None:
        """The earliest kept candidate of which the passage of ``sig`` is a near duplicate, if
        any."""
        size = sig.size
        kept = self._kept
        for k in sorted(shared):
            other = kept[k][1]
            # sets whose sizes rule out Jaccard >= 4/5 are never compared
            if not may_be_near(size, other.size):
                continue
            if (sig.injective and other.injective
                    and not _may_share_enough(sig, other, shared[k])):
                continue
            if near_keys(sig.keys, size, self._kept_shingles(k)):
                return k
        return None


def _may_share_enough(a: Signature, b: Signature, in_both_prefixes: int) -> bool:
    """Whether two injective signatures whose prefixes share ``in_both_prefixes`` hashes can
    share enough hashes for Jaccard >= 4/5, from their prefixes alone.

    Let m be the smaller of the two prefixes' last hashes. Every hash of A at most m is in A's
    prefix, and likewise for B, so the hashes at most m that both hold are exactly the ones
    their prefixes share. Each other hash of A at most m is one A holds and B does not, so A
    and B share at most ``|A| - (#A<=m - in_both_prefixes)`` hashes; the same holds for B.
    Jaccard rises with the count shared, so at that bound it is the most it can be."""
    last = min(a.prefix[-1], b.prefix[-1])
    most = min(a.size - bisect_right(a.prefix, last), b.size - bisect_right(b.prefix, last))
    return shares_enough(most + in_both_prefixes, a.size, b.size)
