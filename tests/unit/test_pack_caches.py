"""What the engine precomputes or memoises gives what computing afresh would: RRF scores by
their ranks, passage signatures with their shingle counts, the exact shingle keys, and the size
bound of the near-duplicate test."""

from __future__ import annotations

from fractions import Fraction
from zlib import crc32

from hypothesis import given, settings
from hypothesis import strategies as st

from context_service.domain.context.events import QueryRecord
from context_service.domain.pack.model import CollectionCorpus
from context_service.domain.pack.ranking import rrf_micros
from context_service.domain.pack.text import (
    may_be_near,
    near_duplicates,
    near_keys,
    prefix_signature,
    shingle_keys,
    shingles,
    signature,
    token_keys,
)
from context_service.domain.query.tokenizer import tokenize
from context_service.domain.score import to_micros
from tests.support.hypothesis_profiles import scaled

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
    assert sig.size == len(shingles(text)) == len(shingle_keys(sig.keys))
    assert sig.prefix == prefix_signature(text)
    hashes = sorted(shingle_hashes(text))
    assert sig.injective == (len(set(hashes)) == sig.size)
    assert list(sig.prefix) == hashes[:len(sig.prefix)]


def shingle_hashes(text: str) -> list[int]:
    """One hash per distinct shingle: that of the tuple of its tokens' CRC-32s, whatever the
    process, its hash seed or the ids its token table gave."""
    tokens = tokenize(text)
    runs = ([tokens] if len(tokens) < 5
            else [tokens[i:i + 5] for i in range(len(tokens) - 4)])
    distinct = {" ".join(r): r for r in runs}
    return [hash(tuple(crc32(t.encode()) for t in r)) for r in distinct.values()]


TOKENS = st.one_of(WORDS, st.text(min_size=1, max_size=6), st.sampled_from(("Ünïcode", "²", "a")))


@given(st.lists(TOKENS, max_size=30), st.lists(TOKENS, max_size=30))
def test_shingle_keys_are_the_shingles_exactly(a: list[str], b: list[str]) -> None:
    """Sizes and intersections of key sets are those of the shingle sets, for any two texts:
    short ones (one shingle, the whole token run), empty ones, non-ASCII ones."""
    ta, tb = " ".join(a), " ".join(b)
    ka, kb = shingle_keys(token_keys(ta)), shingle_keys(token_keys(tb))
    sa, sb = shingles(ta), shingles(tb)
    assert len(ka) == len(sa) and len(kb) == len(sb)
    assert len(ka & kb) == len(sa & sb)
    assert (ka == kb) == (sa == sb)


POOL = [f"w{i % 97}x{i % 13}" for i in range(400)]  # no 5-token run repeats


@st.composite
def overlapping(draw: st.DrawFn) -> str:
    """Windows of one run of tokens, some edited, some with a stretch repeated: pairs on both
    sides of Jaccard 4/5 with up to 150 shingles (past the first look of ``near_keys``), texts
    with repeated shingles, short texts."""
    start = draw(st.integers(0, 60))
    words = POOL[start:start + draw(st.integers(1, 154))]
    for _ in range(draw(st.integers(0, 3))):
        words[draw(st.integers(0, len(words) - 1))] = draw(st.sampled_from(("edit", "w1x1")))
    if draw(st.booleans()):
        words += words[:draw(st.integers(0, 8))]
    return " ".join(words)


@settings(max_examples=scaled(400))
@given(overlapping(), overlapping())
def test_near_keys_is_the_jaccard_test_of_the_shingle_sets(a: str, b: str) -> None:
    sig = signature(a)
    assert near_keys(sig.keys, sig.size, shingle_keys(token_keys(b))) \
        == near_duplicates(shingles(a), shingles(b))


def test_a_short_text_never_shares_its_shingle_with_a_longer_one() -> None:
    short, longer = "acme board cfo", "acme board cfo lisbon report"
    assert not shingle_keys(token_keys(short)) & shingle_keys(token_keys(longer))
    assert shingle_keys(token_keys(short)) == shingle_keys(token_keys("ACME, board; cfo!"))
    assert shingle_keys(token_keys("")) == shingle_keys(token_keys("  ...  ")) == {b""}


def test_texts_longer_than_the_held_slices_give_every_shingle() -> None:
    words = [f"w{i}" for i in (*range(70_000), 0, 1, 2, 3, 4)]  # the last shingle repeats
    text = " ".join(words)
    # 70,005 tokens: 70,001 shingles, the last one a repeat of the first
    assert len(shingle_keys(token_keys(text))) == len(shingles(text)) == 70_000


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
