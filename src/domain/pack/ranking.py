"""Ranked lists (§7.5) and the deduplicating walk over them (§7.8).

A ranked list orders candidates by tier (0: in force at T), score descending (millionths),
collection, record id. The walk visits the requirement lists in set order, then the task
list, and absorbs each passage whose text duplicates a candidate kept earlier."""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import lru_cache
from itertools import chain, repeat
from typing import NamedTuple

from context_service.domain.pack.model import Corpus, Passage, Scored
from context_service.domain.pack.records import Judge
from context_service.domain.pack.text import (
    Signature,
    may_be_near,
    near_keys_counted,
    shares_enough,
    shingle_keys,
    token_table,
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


class WalkLimits(NamedTuple):
    """What deduplication may cost, in units of work: one unit is one shingle looked up in a
    set, added to a set, or one kept passage found behind a shared prefix hash. The counts
    depend on the texts alone (``text.prefix_signature``), so a cap gives the same pack in
    every process; the deadline is looked at every ``look_every`` units."""

    candidate: int = 200_000  # what one candidate's comparisons may cost
    walk: int = 1_000_000  # what the whole walk may cost
    look_every: int = 50_000  # units between two looks at the deadline


LIMITS = WalkLimits()


class Walk:
    """Candidates in walk order (first encounter), with deduplication as they are met.

    Exact duplicates have equal shingle sets, so the near-duplicate test finds them too. A
    candidate is compared only with the kept candidates whose prefix signatures share a hash
    with its own, and each such pair passes two exact filters before its shingle sets are
    compared: the sizes, and the count of shared prefix hashes (``_may_share_enough``). The
    sets compared are ``text.shingle_keys`` (exact: slices of the texts' token ids, all of one
    token table generation, held for the whole walk).

    The work is bounded (``WalkLimits``): a candidate whose comparisons would cost more than
    its share is kept without them (``capped``), and once the walk's share is spent, or the
    deadline has passed (``cut_short``), every later candidate is kept unchecked; each such
    candidate is in ``unchecked``."""

    def __init__(self, corpus: Corpus, deadline_passed: Callable[[], bool] | None = None,
                 limits: WalkLimits = LIMITS) -> None:
        self.corpus = corpus
        self.order: list[Candidate] = []  # every candidate, first encounter, absorbed included
        self.seen: set[str] = set()
        self.keeper_of: dict[str, str] = {}  # absorbed ref -> keeper ref
        self.absorbed: dict[str, list[str]] = {}  # keeper ref -> absorbed refs, in order
        self.duplicates: list[str] = []  # absorbed refs, in order
        self.unchecked: list[str] = []  # refs kept without every comparison, in order
        self.capped = False  # a candidate or the walk reached its share of work
        self.cut_short = False  # the deadline passed during the walk
        self.work = 0  # units spent
        self._paced = 0  # units spent, plus each candidate's tokens: paces the deadline looks
        self._limits = limits
        self._deadline = deadline_passed
        self._look_at = limits.look_every
        self._allowance = min(limits.candidate, limits.walk)  # what the next candidate may cost
        self._stopped = False
        self._table = token_table()
        self._kept: list[tuple[Passage, Signature]] = []
        self._shingles: dict[int, frozenset[bytes]] = {}  # kept index -> its shingle keys
        # prefix hash -> the first kept index holding it; ``_more``: the later ones, for the
        # few hashes two kept passages share (most hold none another holds: no list for them)
        self._first: dict[int, int] = {}
        self._more: defaultdict[int, list[int]] = defaultdict(list)

    def visit(self, candidates: Sequence[Candidate]) -> None:
        for c in candidates:
            ref = c.ref
            if ref in self.seen:
                continue
            self.seen.add(ref)
            self.order.append(c)
            if self._paced >= self._look_at and self._stops():
                self.unchecked.append(ref)
                continue
            self._dedup(c.passage, ref)

    def is_absorbed(self, ref: str) -> bool:
        return ref in self.keeper_of

    def _stops(self) -> bool:
        """Whether the walk compares no more: its share was spent, or the deadline, looked at
        once per ``look_every`` units of work (a signature computed for the walk, linear in
        its text, counts its tokens), has passed."""
        if not self._stopped:
            self._look_at = self._paced + self._limits.look_every
            if self._deadline is not None and self._deadline():
                self.cut_short = True
                self._stop()
        return self._stopped

    def _stop(self) -> None:
        self._stopped = True
        self._look_at = -1  # every later candidate asks ``_stops``

    def _kept_shingles(self, k: int) -> frozenset[bytes]:
        found = self._shingles.get(k)
        if found is None:
            found = self._shingles[k] = shingle_keys(self._kept[k][1].keys)
        return found

    def _dedup(self, p: Passage, ref: str) -> None:
        sig = self.corpus[p.collection].signature(p.record.id, self._table)
        self._paced += len(sig.keys) >> 2
        first, more = self._first, self._more
        allowance = self._allowance
        if len(sig.prefix) * len(self._kept) > allowance:  # the probe alone may cost too much
            probes = sum(map(first.__contains__, sig.prefix))
            if more:
                probes += sum(map(len, map(more.get, sig.prefix, repeat(()))))
            if probes > allowance:
                self._unchecked(p, sig, ref)
                return
        # kept index -> how many of this prefix's hashes its prefix holds (most candidates
        # share no hash with a kept one: nothing to count then)
        if first.keys().isdisjoint(sig.prefix):
            index = len(self._kept)
            self._kept.append((p, sig))
            if sig.injective:  # distinct hashes, none held yet
                first.update(zip(sig.prefix, repeat(index)))
            else:
                self._hold(sig, index)
            return
        shared = Counter(map(first.__getitem__, filter(first.__contains__, sig.prefix)))
        if more:
            shared.update(chain.from_iterable(map(more.get, sig.prefix, repeat(()))))
        if shared:
            keeper, spent = self._keeper(sig, shared, sum(shared.values()), allowance)
            self._spend(spent)
            if keeper is not None:
                if keeper < 0:  # its comparisons would pass its share
                    self._unchecked(p, sig, ref)
                    return
                keeper_ref = self._kept[keeper][0].ref
                self.keeper_of[ref] = keeper_ref
                self.absorbed.setdefault(keeper_ref, []).append(ref)
                self.duplicates.append(ref)
                return
        index = len(self._kept)
        self._kept.append((p, sig))
        self._hold(sig, index)

    def _hold(self, sig: Signature, index: int) -> None:
        """Add kept ``index`` to the kept indexes of each hash of its prefix."""
        first, more = self._first, self._more
        for h in sig.prefix:
            if h in first:
                more[h].append(index)
            else:
                first[h] = index

    def _spend(self, units: int) -> None:
        self.work += units
        self._paced += units
        self._allowance = min(self._limits.candidate, self._limits.walk - self.work)

    def _unchecked(self, p: Passage, sig: Signature, ref: str) -> None:
        """Keep a candidate whose comparisons would pass its allowance; when that was what
        remained of the walk's share, the walk stops comparing."""
        self.capped = True
        self.unchecked.append(ref)
        index = len(self._kept)
        self._kept.append((p, sig))
        self._hold(sig, index)
        if self._allowance < self._limits.candidate:
            self._stop()

    def _keeper(self, sig: Signature, shared: Counter[int], spent: int,
                allowance: int) -> tuple[int | None, int]:
        """The earliest kept candidate of which the passage of ``sig`` is a near duplicate
        (None: none is; -1: finding out would pass ``allowance``), and the work spent, from
        ``spent``."""
        size = sig.size
        kept = self._kept
        held = self._shingles
        for k in sorted(shared):
            other = kept[k][1]
            # sets whose sizes rule out Jaccard >= 4/5 are never compared
            if not may_be_near(size, other.size):
                continue
            if (sig.injective and other.injective
                    and not _may_share_enough(sig, other, shared[k])):
                continue
            building = 0 if k in held else other.size
            if spent + building + size > allowance:
                return -1, spent
            near, looked = near_keys_counted(sig.keys, size, self._kept_shingles(k))
            spent += building + looked
            if near:
                return k, spent
        return None, spent


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
