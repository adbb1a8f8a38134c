"""What packs read, over real PostgreSQL: features computed at publication, the namespace
folded to a position (equal to folding the raw log), time travel, and the fast retrieval lists
against the formula (BM25) and against cosines computed here (vector list).

The tests marked ``shared_service`` share one service and write to namespaces of their own; the
warmer's tests keep a fresh one: a warming pass loads every current index of the service (the
counts they check are the service's), and a warmer started for serving runs on in the
background and sets process-wide limits."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence

import msgspec
import numpy as np
import pytest
from threadpoolctl import threadpool_info

from context_service.adapters.embedding.wordllama_model import load
from context_service.adapters.pack.corpus import MAX_BACKGROUND, Cached, CorpusLoader
from context_service.adapters.pack.hybrid_features import HybridFeatures, ModelPieces
from context_service.adapters.pack.vector_matrix import VectorMatrices
from context_service.adapters.pack.warmer import CorpusWarmer
from context_service.adapters.postgres.views.features import PassageFeaturesSql
from context_service.bootstrap import Container, pack_ports
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.context.state import ContextState
from context_service.domain.context.state import evolve as evolve_context
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.context_set.state import evolve as evolve_set
from context_service.domain.events import ADMIN
from context_service.domain.pack.model import CollectionAt, document_id
from context_service.domain.pack.reference import ReferenceRetrieval
from context_service.domain.pack.text import token_ids
from context_service.projections.pack_inputs.fold import EPOCH
from context_service.projections.pack_inputs.reads import CorpusLoading
from context_service.projections.pack_inputs.view import PACK_INPUTS
from context_service.projections.passage_features.features import text_hash
from tests.projections.history import write_history
from tests.projections.pack_support import (
    WHEN,
    WORDS,
    caught_up,
    collection,
    digest,
    formula_bm25,
    generated_corpus,
    publish,
    random_records,
)
from tests.projections.set_history import write_set_history
from tests.support.api_helpers import fresh

pytestmark = pytest.mark.postgres
shared = pytest.mark.shared_service  # the test's writes are in a namespace of its own


@pytest.fixture
def ns() -> str:
    """A namespace no other test of the run writes to."""
    return fresh("ns")


def _generated(container: Container, seed: int, ns: str) -> None:
    """``generated_corpus(container, seed)`` written to ``ns``: c0..c3 of 60 random records
    each, every view caught up."""
    rng = random.Random(seed)
    for name in (f"c{i}" for i in range(4)):
        rev = digest(rng)
        collection(container.contexts, name, rev, ns=ns)
        publish(container.contexts, name, rev, random_records(rng, name, rev, 60), ns=ns)
    caught_up(container)


@shared
def test_features_and_agent_data_are_computed_at_publication(container: Container,
                                                             ns: str) -> None:
    rev = "a" * 64
    collection(container.contexts, "notes", rev, ns=ns)
    records = (
        QueryRecord(id="r1", context="notes", type="memory", revision=rev, title="CFO",
                    text="Who is the current CFO, and since when?", file="board.md"),
        QueryRecord(id="r2", context="notes", type="memory", revision=rev, text="Anna Berg.",
                    file="board.md"),
        QueryRecord(id="r1", context="notes", type="memory", revision=rev, text="ignored"))
    position = publish(container.contexts, "notes", rev, records, ns=ns)
    caught_up(container)
    model = load()
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT hash, tokens, embedding IS NOT NULL AS v,"
                    " vector_norm(embedding) AS norm FROM passage_features")
        rows = {bytes(r["hash"]): r for r in cur.fetchall()}
        cur.execute("SELECT record_id, ord, tokens, document_id, embedding IS NOT NULL AS v"
                    " FROM agent_passages WHERE publication = %s ORDER BY ord", (position,))
        passages = cur.fetchall()
        cur.execute("SELECT tokens, passages FROM agent_documents WHERE publication = %s",
                    (position,))
        documents = cur.fetchall()
    question = "Who is the current CFO, and since when?"
    assert rows[text_hash(question)]["tokens"] == 11
    embedded = rows[text_hash("CFO\n" + question)]
    assert embedded["v"] and abs(embedded["norm"] - 1) < 1e-6
    assert embedded["tokens"] == model.count("CFO\n" + question)
    assert rows[text_hash("ignored")]["tokens"] == model.count("ignored")  # every text published
    doc_text = question + "\n\nAnna Berg."
    assert rows[text_hash(doc_text)]["tokens"] == model.count(doc_text)
    assert [(bytes(p["record_id"]), p["ord"], p["tokens"]) for p in passages] == [
        (b"r1", 0, 11), (b"r2", 1, model.count("Anna Berg."))]
    assert {bytes(p["document_id"]) for p in passages} == {b"notes/board.md"}
    assert all(p["v"] for p in passages)
    assert [(d["tokens"], d["passages"]) for d in documents] == [(model.count(doc_text), 2)]


class _Refusing(ModelPieces):
    """The model, counting the texts it is asked to tokenize."""

    def __init__(self) -> None:
        super().__init__()
        self.tokenized: list[str] = []

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        self.tokenized.extend(texts)
        return super().token_ids(texts)


@shared
def test_the_loader_pools_the_pieces_stored_at_publication(container: Container,
                                                           ns: str) -> None:
    rng = random.Random(5)
    rev = digest(rng)
    collection(container.contexts, "talk", rev, ns=ns)
    records = random_records(rng, "talk", rev, 40)
    publish(container.contexts, "talk", rev, records, ns=ns)
    caught_up(container)
    ports = pack_ports(container)
    p, _ = ports.inputs.resolve(ns, None, None)
    (at,) = ports.inputs.namespace_at(ns, p).collections.values()
    model = _Refusing()
    held = CorpusLoader(container.datastore, load().count, model=model).cached(at)
    assert model.tokenized == []  # every record's pieces were stored with its vector
    tokenized = HybridFeatures(held.corpus, ModelPieces())
    assert np.array_equal(held.hybrid.vectors, tokenized.vectors)
    assert held.hybrid.piece_idf.tolist() == tokenized.piece_idf.tolist()

    # a text stored before its pieces were (migration 0018) is tokenized at load, and gains
    # them at its next publication
    first = held.corpus.passages[0].record
    key = text_hash(f"{first.title}\n{first.text}" if first.title else first.text)
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("UPDATE passage_features SET pieces = NULL WHERE hash = %s", (key,))
        assert PassageFeaturesSql(cur).known([key]) == {key: False}
    model = _Refusing()
    again = CorpusLoader(container.datastore, load().count, model=model).cached(at)
    assert model.tokenized == [f"{first.title}\n{first.text}" if first.title else first.text]
    assert np.array_equal(again.hybrid.vectors, tokenized.vectors)
    publish(container.contexts, "talk", rev, records, ns=ns)
    caught_up(container)
    with container.datastore.transaction(commit=False) as cur:
        assert PassageFeaturesSql(cur).known([key]) == {key: True}


def _fold_log(container: Container, namespace: str, position: int
              ) -> tuple[dict[str, ContextState], dict[str, ContextSetState]]:
    contexts: dict[str, ContextState] = {}
    sets: dict[str, ContextSetState] = {}
    for r in container.store.read(0, 1_000_000, stop=position):
        if r.stream.namespace != namespace:
            continue
        if r.stream.kind == "context":
            contexts[r.stream.key] = evolve_context(contexts.get(r.stream.key, ContextState()),
                                                    r.event)
        elif r.stream.kind == "context_set":
            sets[r.stream.key] = evolve_set(sets.get(r.stream.key, ContextSetState()), r.event)
    return contexts, sets


@shared  # the only test of the module's service writing to "ns" (the generated histories')
def test_namespace_at_equals_the_fold_of_the_raw_log(container: Container) -> None:
    first = container.store.head() + 1  # what the service held before is another test's
    write_history(container.contexts, seed=5, steps=150)
    write_set_history(container.context_sets, seed=5, steps=60)
    caught_up(container)
    ports = pack_ports(container)
    log = container.store.read(0, 1_000_000)
    head = log[-1].position
    inputs = [r for r in log if r.stream.namespace == "ns" and isinstance(r.event, PACK_INPUTS)]
    assert len(inputs) > 30
    rng = random.Random(1)
    for position in [*sorted(rng.sample(range(first, head + 1), 12)), head]:
        before = [r for r in inputs if r.position <= position]
        p, when = ports.inputs.resolve("ns", position, None)
        assert p == (before[-1].position if before else 0)
        assert when == (before[-1].event.at if before else EPOCH)
        at = ports.inputs.namespace_at("ns", p)
        contexts, sets = _fold_log(container, "ns", p)
        assert set(at.collections) == set(contexts)
        for name, state in contexts.items():
            got = at.collections[name]
            assert (got.live, got.type, got.current_revision, got.index_revision) == (
                state.live, state.type, state.current_revision,
                state.index_revision or "")
            published = [r.position for r in before if r.stream.key == name
                         and type(r.event).__name__ == "QueryIndexPublished"]
            if got.publication:
                assert got.publication == published[-1]
        assert at.sets == {s.id: s for s in sets.values() if s.exists}
    # with a system time: the latest pack input recorded at or before it
    middle = inputs[len(inputs) // 2]
    p, when = ports.inputs.resolve("ns", None, middle.event.at)
    assert when == middle.event.at
    assert p == max(r.position for r in inputs if r.event.at <= middle.event.at)
    assert ports.inputs.resolve("nobody", None, None) == (0, EPOCH)


@shared
def test_an_older_position_reads_the_older_index(container: Container, ns: str) -> None:
    first, second = "1" * 64, "2" * 64
    source = SourceRef("upstream", "state", "3" * 64)
    collection(container.contexts, "notes", first, ns=ns, sources=(source,))
    old = (QueryRecord(id="a", context="notes", type="memory", revision=first,
                       text="budget plan"),)
    publish(container.contexts, "notes", first, old, ns=ns)
    caught_up(container)
    ports = pack_ports(container)
    p_old, _ = ports.inputs.resolve(ns, None, None)
    container.contexts.execute(ns, "notes", c.PublishRevision(
        actor=ADMIN, id=second, created_at=WHEN, operation="sync"))
    new = (QueryRecord(id="b", context="notes", type="memory", revision=second,
                       text="revenue growth"),)
    publish(container.contexts, "notes", second, new, ns=ns)
    caught_up(container)
    p_new, _ = ports.inputs.resolve(ns, None, None)
    at_old = ports.inputs.namespace_at(ns, p_old)
    at_new = ports.inputs.namespace_at(ns, p_new)
    assert at_old.collections["notes"].sources == (source,)
    assert at_new.collections["notes"].sources == ()
    old_corpus = ports.corpus.corpus(list(at_old.collections.values()))
    new_corpus = ports.corpus.corpus(list(at_new.collections.values()))
    assert [p.record.id for p in old_corpus["notes"].passages] == ["a"]
    assert [p.record.id for p in new_corpus["notes"].passages] == ["b"]
    # the older index is no longer current: its vectors come from passage_features
    assert [s.record_id for s in ports.retrieval.vector("budget plan", old_corpus, None)] == [
        "a"]
    assert [s.record_id for s in ports.retrieval.lexical("budget", old_corpus, None)] == ["a"]
    assert ports.retrieval.lexical("budget", new_corpus, None) == []
    # between the index's revision and its publication the index is unusable
    middle = ports.inputs.namespace_at(ns, p_new - 1)
    assert not middle.collections["notes"].usable
    assert ports.corpus.corpus(list(middle.collections.values())) == {}


@shared
@pytest.mark.parametrize("seed", [3, 8])
def test_lexical_lists_equal_the_reference(container: Container, ns: str, seed: int) -> None:
    _generated(container, seed, ns)
    ports = pack_ports(container)
    p, _ = ports.inputs.resolve(ns, None, None)
    corpus = ports.corpus.corpus(list(ports.inputs.namespace_at(ns, p).collections.values()))
    assert len(corpus) == 4
    rng = random.Random(seed)
    documents = sorted({d for one in corpus.values() for d in one.document_of.values()})
    for _ in range(8):
        query = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        eligible = (None if rng.random() < 0.5
                    else frozenset(rng.sample(documents, len(documents) // 3)))
        got = ports.retrieval.lexical(query, corpus, eligible)
        assert got == ReferenceRetrieval().lexical(query, corpus, eligible)
        assert [(s.collection, s.record_id, round(s.score * 1e6)) for s in got] == \
            formula_bm25(query, corpus, eligible)
        if eligible is not None:
            assert all(corpus[s.collection].document_of[s.record_id] in eligible for s in got)
    assert ports.retrieval.lexical("zzz unknown", corpus, None) == []


@shared
def test_vector_list_orders_by_cosine_and_cuts_at_a_quarter(container: Container,
                                                            ns: str) -> None:
    _generated(container, 4, ns)
    ports = pack_ports(container)
    p, _ = ports.inputs.resolve(ns, None, None)
    corpus = ports.corpus.corpus(list(ports.inputs.namespace_at(ns, p).collections.values()))
    model = load()
    query = "who was appointed cfo by the board"
    task = model.embed(query)
    assert task is not None
    expected = []
    for name, one in corpus.items():
        for passage in one.passages:
            r = passage.record
            vector = model.embed(f"{r.title}\n{r.text}" if r.title else r.text)
            if vector is not None:
                cosine = float(np.dot(vector.astype(np.float64), task.astype(np.float64)))
                expected.append((cosine, name, r.id))
    got = ports.retrieval.vector(query, corpus, None)
    assert got, "some records share words with the query"
    assert len(got) <= 200
    assert all(s.score >= 0.25 for s in got)
    keys = [(-s.score, s.collection, s.record_id) for s in got]
    assert keys == sorted(keys)
    by_key = {(n, i): cos for cos, n, i in expected}
    for s in got:
        assert abs(by_key[(s.collection, s.record_id)] - s.score) < 2e-6
    above = {(n, i) for cos, n, i in expected if cos >= 0.25 + 1e-5}
    if len(above) <= 200:
        assert above <= {(s.collection, s.record_id) for s in got}
    assert all(cos < 0.25 + 1e-5 for cos, n, i in expected
               if (n, i) not in {(s.collection, s.record_id) for s in got}) or len(got) == 200
    eligible = frozenset(document_id(s.collection, corpus[s.collection].by_id[s.record_id].record)
                         for s in got[:3])
    restricted = ports.retrieval.vector(query, corpus, eligible)
    assert restricted and all(corpus[s.collection].document_of[s.record_id] in eligible
                              for s in restricted)
    assert [s for s in got if corpus[s.collection].document_of[s.record_id] in eligible] == \
        restricted[:len([s for s in got
                         if corpus[s.collection].document_of[s.record_id] in eligible])]


def test_the_warmer_loads_current_indexes_before_any_pack(container: Container) -> None:
    generated_corpus(container, 2)
    ports = pack_ports(container)
    loader = ports.corpus
    assert isinstance(loader, CorpusLoader)
    assert CorpusWarmer(loader).warm() == 4
    assert CorpusWarmer(loader).warm() == 0  # nothing new
    listed, seen = CorpusWarmer(loader).current()  # with the position its view had reached
    assert len(listed) == 4 and seen >= max(c.publication for c in listed)
    p, _ = ports.inputs.resolve("ns", None, None)
    corpus = loader.corpus(list(ports.inputs.namespace_at("ns", p).collections.values()))
    assert len(corpus) == 4 and loader.loads == 4  # every index came from the warm cache


def _loader_and_index(container: Container, seed: int,
                      ns: str) -> tuple[CorpusLoader, CollectionAt]:
    """A new corpus loader over ``_generated(container, seed, ns)``, and one of its indexes."""
    _generated(container, seed, ns)
    ports = pack_ports(container)
    assert isinstance(ports.corpus, CorpusLoader)
    p, _ = ports.inputs.resolve(ns, None, None)
    return ports.corpus, next(iter(ports.inputs.namespace_at(ns, p).collections.values()))


def _held_reads(loader: CorpusLoader, monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make every read of ``loader`` wait until the returned event is set."""
    gate, real_load = threading.Event(), loader._load

    def held(collection: CollectionAt) -> object:
        gate.wait(30)
        return real_load(collection)

    monkeypatch.setattr(loader, "_load", held)
    return gate


@shared
def test_an_index_asked_for_at_once_is_loaded_once(
        container: Container, monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    """Six packs (or the warmer and packs) missing the same index together: one reads and
    computes it, the others wait for that result; a failed load fails every waiter with the
    same error and the next ask loads again."""
    loader, wanted = _loader_and_index(container, 1, ns)
    real_load, entered, failing = loader._load, threading.Semaphore(0), [False]

    def slow_load(collection: CollectionAt) -> object:
        entered.release()
        # the first load holds on until five more askers entered it too (what each asker did
        # before single loads) or a second passed: askers arriving meanwhile must wait
        for _ in range(5):
            if not entered.acquire(timeout=1.0):
                break
        if failing[0]:
            raise LookupError("gone")
        return real_load(collection)

    monkeypatch.setattr(loader, "_load", slow_load)
    for fails in (True, False):
        failing[0] = fails
        start = threading.Barrier(6)
        results: list[object] = []

        def ask(start: threading.Barrier, results: list[object]) -> None:
            start.wait()
            try:
                results.append(loader.cached(wanted))
            except LookupError as exc:
                results.append(exc)

        threads = [threading.Thread(target=ask, args=(start, results)) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(results) == 6 and len({id(r) for r in results}) == 1, results
        assert isinstance(results[0], LookupError if fails else Cached)
    assert loader.loads == 1 and not loader._flights


def test_an_asker_with_a_deadline_waits_no_longer_and_the_load_goes_on(
        container: Container, monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    loader, wanted = _loader_and_index(container, 6, ns)
    gate = _held_reads(loader, monkeypatch)
    others = [msgspec.structs.replace(wanted, publication=10**12 + i)
              for i in range(MAX_BACKGROUND)]
    older = msgspec.structs.replace(wanted, publication=10**13)
    loader.retain([wanted.publication] + [o.publication for o in others])  # the current ones
    try:
        # an index no longer current is loaded by the asker itself, as before: the cache
        # would not keep what a load behind it left
        gate.set()
        with pytest.raises(LookupError):
            loader.cached(older, until=time.monotonic())
        gate.clear()
        started = time.monotonic()
        with pytest.raises(CorpusLoading):  # it leads the load, on a thread of its own
            loader.corpus([wanted], until=started + 0.2)
        with pytest.raises(CorpusLoading):  # a second asker joins that load
            loader.cached(wanted, until=time.monotonic() + 0.1)
        assert time.monotonic() - started < 5 and loader.loads == 0
        # every missing index of one ask starts loading before any is waited for; at most
        # MAX_BACKGROUND loads on threads of their own: past that, refused at once
        with pytest.raises(CorpusLoading):
            loader.corpus(others[:-1], until=time.monotonic())
        assert loader._background == MAX_BACKGROUND
        flights = len(loader._flights)
        with pytest.raises(CorpusLoading):
            loader.cached(others[-1], until=time.monotonic() + 30)
        assert len(loader._flights) == flights
    finally:
        gate.set()
    held_corpus = loader.cached(wanted, until=time.monotonic() + 30)
    assert isinstance(held_corpus, Cached) and loader.loads == 1
    for _ in range(300):  # the loads of positions that hold no index fail, and are forgotten
        if not loader._background:
            break
        time.sleep(0.1)
    assert loader._background == 0 and not loader._flights


def test_an_index_published_after_the_warmers_list_counts_as_current(
        container: Container, monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    """Between a publication and the warmer's next list (2 s, or a whole pass of loads), an
    asker with a deadline does not lead the new index's load itself: it is published after
    the position the list was read at, so it is current. An index at or before that position
    and not in the list is not (an older position's, a deleted context's)."""
    loader, wanted = _loader_and_index(container, 7, ns)
    gate = _held_reads(loader, monkeypatch)
    before = msgspec.structs.replace(wanted, publication=wanted.publication - 1)
    loader.retain([], seen=wanted.publication - 1)  # listed before the publication
    try:
        with pytest.raises(CorpusLoading):  # loaded behind the asker, not by it
            loader.cached(wanted, until=time.monotonic() + 0.2)
        assert loader._background == 1
        gate.set()
        with pytest.raises(LookupError):  # not current: the asker loads it (no index there)
            loader.cached(before, until=time.monotonic())
    finally:
        gate.set()
    held_corpus = loader.cached(wanted, until=time.monotonic() + 30)
    assert isinstance(held_corpus, Cached) and loader.holds(wanted.publication)
    # a list read before the publication keeps what was loaded after it; a list read after
    # it and without it drops it
    loader.retain([], seen=wanted.publication - 1)
    assert loader.holds(wanted.publication)
    loader.retain([], seen=wanted.publication)
    assert not loader.holds(wanted.publication)

    def gone(collection: CollectionAt) -> object:
        raise LookupError(collection.name)

    monkeypatch.setattr(loader, "_load", gone)
    with pytest.raises(LookupError):  # nor loaded behind an asker any more: it leads the load
        loader.cached(wanted, until=time.monotonic())
    assert loader._background == 0 and not loader._flights


def test_the_warmer_freezes_corpora_whoever_loaded_them(
        container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    generated_corpus(container, 2)
    ports = pack_ports(container)
    loader = ports.corpus
    assert isinstance(loader, CorpusLoader)
    frozen: list[int] = []
    monkeypatch.setattr("context_service.adapters.pack.warmer.gc.freeze",
                        lambda: frozen.append(loader.loads))
    p, _ = ports.inputs.resolve("ns", None, None)
    loader.corpus(list(ports.inputs.namespace_at("ns", p).collections.values()))  # a pack's load
    warmer = CorpusWarmer(loader)
    warmer.step()
    assert frozen == [4]  # the warmer loaded nothing, yet froze what the pack loaded
    warmer.step()
    assert frozen == [4]  # nothing new: no freeze


def test_the_serving_packs_keep_matrix_products_on_one_thread(container: Container) -> None:
    pack_ports(container, warm=True)
    blas = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    assert blas and all(pool["num_threads"] == 1 for pool in blas)


def test_the_warmer_reads_the_vectors_and_says_when_the_caches_are_complete(
        container: Container) -> None:
    generated_corpus(container, 2)
    ports = pack_ports(container)
    loader = ports.corpus
    assert isinstance(loader, CorpusLoader)
    matrices = VectorMatrices(container.datastore)
    warmer = CorpusWarmer(loader, matrices=matrices)
    gauges = {name: value for name, _, _, value in warmer.gauges()}
    assert gauges["cs_pack_cache_complete"] == 0 and gauges["cs_pack_matrix_rows"] == 0
    warmer.warm()
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT count(*) AS n FROM agent_passages WHERE embedding IS NOT NULL")
        embedded = cur.fetchone()["n"]
    gauges = {name: value for name, _, _, value in warmer.gauges()}
    assert gauges == {"cs_pack_corpus_passages": loader.passages(),
                      "cs_pack_matrix_rows": embedded, "cs_pack_matrix_indexes": 4,
                      "cs_pack_cache_complete": 1, "cs_pack_exact_cosine": 1,
                      "cs_pack_token_ids": token_ids()}
    assert token_ids() > 0  # the warmed signatures gave their tokens ids
    assert embedded > 0 and loader.passages() >= embedded
    matrices.retain([])  # e.g. a matrix evicted: no longer complete at the next pass
    matrices.max_rows = 0
    warmer.warm()
    assert dict((n, v) for n, _, _, v in warmer.gauges())["cs_pack_cache_complete"] == 0
