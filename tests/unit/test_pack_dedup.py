"""Deduplication of candidates (agent-context-api §7.8, §5.5): the walk's prefix-filtered
search absorbs exactly what comparing every pair of shingle sets would."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.pack.ranking import Candidate, Walk
from context_service.domain.pack.text import normalised, shingles

SENTENCE = ("the quarterly report of acme shows strong growth in lisbon and porto offices "
            "while the board expects the new finance team to keep costs flat through the next "
            "two years as the company opens more sites")
BASE = SENTENCE.split(" ")


@st.composite
def texts(draw: st.DrawFn) -> str:
    """Variations of one sentence, so that near duplicates are common."""
    words = list(BASE[:draw(st.sampled_from((3, 30, len(BASE) - 4, len(BASE))))])
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(words)))
        words.insert(at, draw(st.sampled_from(("really", "acme", "Report", "q3"))))
    return " ".join(words)


POOL = [f"w{i % 97}x{i % 13}" for i in range(400)]  # 400 tokens, few repeated 5-token runs


@st.composite
def windows(draw: st.DrawFn) -> str:
    """Overlapping windows of one long token run, some edited: sets of 30 to 150 shingles
    whose overlaps fall on both sides of Jaccard 4/5, where the prefix count bound decides."""
    start = draw(st.integers(0, 60))
    words = POOL[start:start + draw(st.integers(34, 154))]
    for _ in range(draw(st.integers(0, 2))):
        words[draw(st.integers(0, len(words) - 1))] = draw(st.sampled_from(("edit", "acme")))
    return " ".join(words)


def brute_force(refs_texts: list[tuple[str, str]]) -> dict[str, str]:
    kept: list[tuple[str, str]] = []
    keeper_of: dict[str, str] = {}
    for ref, text in refs_texts:
        mine = shingles(text)
        for kref, ktext in kept:
            other = shingles(ktext)
            if normalised(text) == normalised(ktext) or Fraction(
                    len(mine & other), len(mine | other)) >= Fraction(4, 5):
                keeper_of[ref] = kref
                break
        else:
            kept.append((ref, text))
    return keeper_of


@given(st.lists(texts(), min_size=1, max_size=25), st.integers(1, 3))
def test_the_walk_absorbs_what_brute_force_would(all_texts: list[str], lists: int) -> None:
    records = [QueryRecord(id=f"r{i:02d}", context="c", type="memory", revision="1", text=t)
               for i, t in enumerate(all_texts)]
    corpus = CollectionCorpus("c", "1", 1, records, len)
    candidates = [Candidate(p, 0, 0) for p in corpus.passages]
    walk = Walk({"c": corpus})
    size = max(1, len(candidates) // lists)
    for start in range(0, len(candidates), size):  # several lists, walked in order
        walk.visit(candidates[start:start + size])
    walk.visit(candidates)  # already seen: nothing changes
    expected = brute_force([(c.ref, c.passage.record.text) for c in candidates])
    assert walk.keeper_of == expected
    assert walk.duplicates == [c.ref for c in candidates if c.ref in expected]
    for keeper, absorbed in walk.absorbed.items():
        assert absorbed == [r for r in walk.duplicates if expected[r] == keeper]


@given(st.lists(windows(), min_size=2, max_size=20))
def test_long_overlapping_windows_are_absorbed_as_brute_force_would(
        all_texts: list[str]) -> None:
    records = [QueryRecord(id=f"r{i:02d}", context="c", type="memory", revision="1", text=t)
               for i, t in enumerate(all_texts)]
    corpus = CollectionCorpus("c", "1", 1, records, len)
    candidates = [Candidate(p, 0, 0) for p in corpus.passages]
    walk = Walk({"c": corpus})
    walk.visit(candidates)
    expected = brute_force([(c.ref, c.passage.record.text) for c in candidates])
    assert walk.keeper_of == expected
    assert walk.duplicates == [c.ref for c in candidates if c.ref in expected]
