"""The walk's shortcut for a candidate sharing no prefix hash with a kept one (nothing counted,
its hashes stored at once), and its layout of the kept prefixes (a hash's first kept index
apart from the later ones), change nothing it decides: the same absorptions, work units, caps
and unchecked candidates as counting every candidate's shared hashes in one list per hash, as
the walk did before."""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import chain, repeat
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionCorpus, Passage
from context_service.domain.pack.ranking import Candidate, Walk, WalkLimits
from context_service.domain.pack.text import Signature, TokenTable
from tests.unit.test_pack_dedup import texts, windows


class CountedWalk(Walk):
    """The walk as it was: one list of kept indexes per prefix hash, every candidate's shared
    hashes counted, no shortcut."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lists: defaultdict[int, list[int]] = defaultdict(list)

    def _hold(self, sig: Signature, index: int) -> None:
        for h in sig.prefix:
            self.lists[h].append(index)

    def _dedup(self, p: Passage, ref: str) -> None:
        sig = self.corpus[p.collection].signature(p.record.id, self._table)
        self._paced += len(sig.keys) >> 2
        by_prefix = self.lists
        allowance = self._allowance
        if len(sig.prefix) * len(self._kept) > allowance:
            probes = sum(map(len, map(by_prefix.get, sig.prefix, repeat(()))))
            if probes > allowance:
                self._unchecked(p, sig, ref)
                return
        shared = Counter(chain.from_iterable(map(by_prefix.get, sig.prefix, repeat(()))))
        if shared:
            keeper, spent = self._keeper(sig, shared, sum(shared.values()), allowance)
            self._spend(spent)
            if keeper is not None:
                if keeper < 0:
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


class NotInjective(CollectionCorpus):
    """Signatures marked as if two shingles shared a hash (the shortcut's other branch)."""

    def signature(self, record_id: str, table: TokenTable | None = None) -> Signature:
        return super().signature(record_id, table)._replace(injective=False)


def outcome(walk: Walk) -> object:
    return ([c.ref for c in walk.order], walk.keeper_of, walk.absorbed, walk.duplicates,
            walk.unchecked, walk.capped, walk.cut_short, walk.work)


def walked(kind: type[Walk], corpus: CollectionCorpus, lists: int,
           limits: WalkLimits) -> object:
    candidates = [Candidate(p, 0, 0) for p in corpus.passages]
    walk = kind({"c": corpus}, lambda: False, limits)
    size = max(1, len(candidates) // lists)
    for start in range(0, len(candidates), size):
        walk.visit(candidates[start:start + size])
    return outcome(walk)


@settings(max_examples=150)
@given(st.lists(st.one_of(texts(), windows()), min_size=1, max_size=30), st.integers(1, 3),
       st.sampled_from((None, 50, 400, 2_000)), st.sampled_from((None, 300, 3_000)),
       st.booleans())
def test_the_shortcut_decides_as_counting_every_candidate(
        all_texts: list[str], lists: int, candidate: int | None, walk_share: int | None,
        injective: bool) -> None:
    records = [QueryRecord(id=f"r{i:02d}", context="c", type="memory", revision="1", text=t)
               for i, t in enumerate(all_texts)]
    limits = WalkLimits(candidate=candidate or WalkLimits().candidate,
                        walk=walk_share or WalkLimits().walk, look_every=10**9)
    kind = CollectionCorpus if injective else NotInjective
    fast = walked(Walk, kind("c", "1", 1, records, len), lists, limits)
    counted = walked(CountedWalk, kind("c", "1", 1, records, len), lists, limits)
    assert fast == counted
