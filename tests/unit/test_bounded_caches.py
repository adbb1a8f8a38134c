"""The in-process caches keyed by what callers send stay within their bounds in estimated bytes,
forget what they are told to, and estimate close to what their entries really take."""

from __future__ import annotations

import gc
import random
import string
import tracemalloc
from datetime import UTC, datetime

import msgspec
import numpy as np
import pytest

from context_service.adapters.embedding.wordllama_model import load
from context_service.adapters.pack.corpus import Cached
from context_service.adapters.pack.inputs_cache import FoldCache
from context_service.adapters.pack.vector_matrix import DIM, Matrix
from context_service.adapters.pack.vector_scan import Layout
from context_service.domain.bounded import BoundedCache
from context_service.domain.context.events import ContextDeleted, QueryRecord
from context_service.domain.context.state import ContextState
from context_service.domain.events import Event, Subject
from context_service.domain.pack.model import CollectionAt, CollectionCorpus, NamespaceAt
from context_service.domain.stream import Recorded, StreamRef
from context_service.projections.context_catalog.listing import CatalogListing

AT = datetime(2026, 1, 1, tzinfo=UTC)


def sized(limit: int, max_entries: int | None = None) -> BoundedCache[str, bytes]:
    return BoundedCache("test", limit, lambda _, v: len(v), max_entries)


def gauges(cache: BoundedCache[str, bytes]) -> dict[str, float]:
    return {name: value for name, _, labels, value in cache.gauges()
            if labels == {"cache": "test"}}


def test_the_least_recently_used_entries_go_first_past_the_bound() -> None:
    cache = sized(100)
    for key in "abc":
        cache.keep(key, b"x" * 40)
    assert cache.keys() == ["b", "c"] and cache.bytes == 80  # a out: 120 > 100
    cache.get("b")
    cache.keep("d", b"x" * 40)
    assert cache.keys() == ["b", "d"]
    assert gauges(cache) == {"cs_cache_entries": 2, "cs_cache_bytes": 80,
                             "cs_cache_limit_bytes": 100}


def test_an_entry_larger_than_the_bound_is_served_not_kept() -> None:
    cache = sized(100)
    cache.keep("a", b"x" * 10)
    big = b"y" * 101
    assert cache.keep("big", big) is big
    assert "big" not in cache and cache.keys() == ["a"] and cache.refused == 1


def test_the_first_value_kept_wins_and_the_entry_count_is_bounded_too() -> None:
    cache = sized(1000, max_entries=2)
    first = b"1"
    assert cache.keep("a", first) is first
    assert cache.keep("a", b"2") is first
    cache.keep("b", b"")
    cache.keep("c", b"")
    assert cache.keys() == ["b", "c"]


def test_forget_and_retain_give_their_bytes_back() -> None:
    cache = sized(1000)
    for key in "abcd":
        cache.keep(key, b"x" * 10)
    assert cache.forget(["a", "zz"]) == 1
    assert cache.retain(lambda key, _: key != "c") == 1
    assert cache.keys() == ["b", "d"] and cache.bytes == 20
    cache.clear()
    assert len(cache) == 0 and cache.bytes == 0


RNG = random.Random(24)


def word() -> str:
    return "".join(RNG.choice(string.ascii_lowercase) for _ in range(RNG.randint(3, 10)))


def records(n: int, words: int) -> list[QueryRecord]:
    return [QueryRecord(id=f"r{i}", context="c", type="knowledge", revision="1", title=word(),
                        keywords=(word(),), text=" ".join(word() for _ in range(words)))
            for i in range(n)]


# three shapes: many short records, a middling corpus, a few long ones. 600 x 60 is the size at
# which an estimate leaving out the lexical index falls below the band (0.57; at 300 x 60 it
# reads 0.66 and passes); the few long records only need enough words that the cache's fixed
# parts stay a few percent of what is measured (15,000: the ratio is 1.0; at 7,500 it is 1.33)
@pytest.mark.parametrize(("n", "words"), [(600, 60), (1500, 8), (30, 500)])
def test_a_corpus_estimate_is_near_what_it_takes(n: int, words: int) -> None:
    """Measured with tracemalloc from the records' bytes on, as the loader holds them (the
    process-wide token-id table filled first: it is not the corpus cache's)."""
    encoded = msgspec.json.encode(records(n, words))
    Cached(CollectionCorpus("c", "1", 1, msgspec.json.decode(encoded, type=list[QueryRecord]),
                            len))  # the model, its word ids and the token table: not the cache's
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cached = Cached(CollectionCorpus(
            "c", "1", 1, msgspec.json.decode(encoded, type=list[QueryRecord]), len))
        taken = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 0.6 <= cached.size / taken <= 1.7  # a dictionary grows by doubling


def test_a_dropped_corpus_leaves_no_cyclic_garbage() -> None:
    """The warmer freezes loaded corpora (``gc.freeze``): only reference counts free a frozen
    object, so a corpus must hold no reference cycle."""
    gc.collect()
    cached = Cached(CollectionCorpus("c", "1", 1, records(50, 20), len))
    gc.disable()
    try:
        del cached
        assert gc.collect() == 0
    finally:
        gc.enable()


def matrix(publication: int, rows: int) -> Matrix:
    vectors = np.ones((rows, DIM), dtype=">f4").tobytes()
    return Matrix(publication, "c", list(range(rows)), [f"r{i}" for i in range(rows)],
                  [b"d"] * rows, vectors)


def test_layouts_of_publications_no_longer_current_are_dropped() -> None:
    a, b, c = matrix(901, 3), matrix(902, 4), matrix(903, 5)
    Layout.of([a, b])
    Layout.of([c])
    Layout.retain([901, 902, 903])
    kept = {p for key in Layout._kept for p, _ in key}
    assert {901, 902, 903} <= kept
    Layout.retain([903])
    kept = {p for key in Layout._kept for p, _ in key}
    assert kept == {903}
    assert Layout._kept.bytes == sum(layout.nbytes() for layout in Layout._kept.values())
    assert a.nbytes() >= a.rows.nbytes


class Lists:
    def __init__(self, states: int) -> None:
        self.states = states
        self.calls = 0

    def list(self, namespace: str, subject: Subject | None) -> list[ContextState]:
        self.calls += 1
        return [ContextState(live=True, namespace=namespace, name=f"c{i}")
                for i in range(self.states)]

    def refused(self, namespace: str) -> frozenset[str]:
        return frozenset()


def test_a_listing_larger_than_the_bound_is_read_every_time() -> None:
    small, large = Lists(2), Lists(400)
    bounded = CatalogListing(small, live=lambda: True, limit_bytes=64 * 1024)
    bounded.live_contexts("acme")
    bounded.live_contexts("acme")
    assert small.calls == 1
    over = CatalogListing(large, live=lambda: True, limit_bytes=64 * 1024)
    over.live_contexts("acme")
    over.live_contexts("acme")
    assert large.calls == 2
    entries = {n: v for n, _, _, v in over.gauges()}
    assert entries["cs_cache_entries"] == 0 and entries["cs_cache_bytes"] == 0


class Folds:
    def __init__(self) -> None:
        self.calls = 0

    def resolve(self, namespace: str, head: int | None,
                system_time: datetime | None) -> tuple[int, datetime]:
        return 7, AT

    def namespace_at(self, namespace: str, position: int) -> NamespaceAt:
        self.calls += 1
        return NamespaceAt(namespace=namespace, position=position, system_time=AT, sets={},
                           collections={"c": CollectionAt(
                               name="c", live=True, type="knowledge", current_revision="1",
                               index_revision="1", publication=position)})


def test_a_batch_forgets_the_folds_of_the_namespaces_whose_pack_inputs_it_carries() -> None:
    reads = Folds()
    folds = FoldCache(reads)
    for ns in ("acme", "globex"):
        folds.namespace_at(ns, 7)
        folds.namespace_at(ns, 7)
    assert reads.calls == 2
    # a pack input (a context deleted) makes acme's folds stale for packs at the head
    folds.applied([Recorded(8, StreamRef("context", "acme", "c"), 2, "ContextDeleted",
                            ContextDeleted(at=AT, actor="a", force=False))])
    assert {n: v for n, _, _, v in folds.gauges()}["cs_cache_entries"] == 1
    folds.namespace_at("globex", 7)
    folds.namespace_at("acme", 7)
    assert reads.calls == 3
    # any other event of the namespace (a pack's own release, say) changes no fold
    folds.applied([Recorded(9, StreamRef("context_pack", "acme", "p"), 1, "E",
                            Event(at=AT, actor="a"))])
    folds.namespace_at("acme", 7)
    folds.namespace_at("globex", 7)
    assert reads.calls == 3


def test_the_word_ids_cache_stays_within_its_bytes_and_its_ids_stay_exact() -> None:
    embedder = load()
    pieces = embedder._pieces
    if pieces is None:
        pytest.skip("the tokenizer is not split word by word")
    limit = pieces.limit
    pieces.limit = 256 * 1024
    try:
        for _ in range(8):
            texts = [" ".join(word() for _ in range(100)) for _ in range(20)]
            assert embedder.token_ids(texts) == embedder.full_token_ids(texts)
            words, held = pieces.held()
            assert held <= pieces.limit + 200 * 2000  # at most one batch past the bound
        assert words < 8 * 2000  # a full cache was replaced by the words in use
        gauges = {n: v for n, _, _, v in embedder.cache_gauges()}
        assert gauges["cs_cache_limit_bytes"] == pieces.limit
        assert gauges["cs_cache_bytes"] == held
    finally:
        pieces.limit = limit
