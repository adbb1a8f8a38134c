"""What the engine precomputes or memoises gives what computing afresh would: RRF scores by
their ranks, passage signatures with their shingle counts, and the size bound of the
near-duplicate test."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import given
from hypothesis import strategies as st

from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.pack.ranking import rrf_micros
from context_service.domain.pack.text import (
    may_be_near,
    prefix_signature,
    shingles,
    signature,
)
from context_service.domain.score import to_micros

WORDS = st.sampled_from(("acme", "board", "cfo", "lisbon", "report", "growth", "q3"))


@given(st.lists(st.integers(1, 200), min_size=1, max_size=2))
def test_memoised_rrf_equals_the_exact_sum(ranks: list[int]) -> None:
    exact = to_micros(sum((Fraction(1, 60 + r) for r in ranks), Fraction(0)))
    assert rrf_micros(ranks) == exact
    assert rrf_micros(tuple(ranks)) == exact  # a second look-up, from the memo


@given(st.lists(WORDS, min_size=1, max_size=40))
def test_a_signature_counts_the_distinct_shingles(words: list[str]) -> None:
    text = " ".join(words)
    sig = signature(text)
    assert sig.size == len(shingles(text))
    assert sig.prefix == prefix_signature(text)
    assert list(sig.hashes) == sorted(hash(s) for s in shingles(text))
    assert sig.injective == (len(set(sig.hashes)) == sig.size)


@given(st.lists(WORDS, min_size=1, max_size=30), st.lists(WORDS, min_size=1, max_size=30))
def test_shared_hashes_never_undercount_shared_shingles(a: list[str], b: list[str]) -> None:
    """The walk's test on hashes may say "maybe" wrongly, never "no" wrongly."""
    ta, tb = " ".join(a), " ".join(b)
    sa, sb = signature(ta), signature(tb)
    if sa.injective:
        assert len(set(sa.hashes) & set(sb.hashes)) >= len(shingles(ta) & shingles(tb))


@given(st.lists(WORDS, min_size=1, max_size=30), st.lists(WORDS, min_size=1, max_size=30))
def test_the_size_bound_never_rules_out_a_near_duplicate(a: list[str], b: list[str]) -> None:
    sa, sb = shingles(" ".join(a)), shingles(" ".join(b))
    if 5 * len(sa & sb) >= 4 * len(sa | sb):
        assert may_be_near(len(sa), len(sb))


def test_a_corpus_memoises_each_signature_once() -> None:
    records = [QueryRecord(id=f"r{i}", context="c", type="memory", revision="1",
                           text=f"one two three four five six {i}") for i in range(3)]
    corpus = CollectionCorpus("c", "1", 1, records, len)
    first = corpus.signature("r1")
    corpus.warm()
    assert corpus.signature("r1") is first
    assert corpus.prefix("r2") == prefix_signature(records[2].text)
