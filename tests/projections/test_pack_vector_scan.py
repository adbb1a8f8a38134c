"""The vector scan of a part of the corpus: rows found by a range of publications leave out the
current indexes of other collections inside that range, and equal the exact scan of the spec
(``1 - (a <=> b)`` over exactly the asked publications), whether the candidates come from
PostgreSQL or from the in-process matrices; the list computed while the caller works equals the
one computed in line.

One service for the module: the tests read one corpus in a namespace of the module's own (the
test replacing an index writes another), and every query here names the corpus's publications."""

from __future__ import annotations

import random
import threading
from typing import Any

import numpy as np
import pytest

from context_service.adapters.pack import vector_matrix, vector_scan
from context_service.adapters.pack.corpus import CorpusLoader
from context_service.adapters.pack.retrieval import FastRetrieval
from context_service.adapters.pack.vector_matrix import MATRIX_BOUND, VectorMatrices
from context_service.adapters.pack.warmer import CorpusWarmer
from context_service.bootstrap import Container, pack_ports
from context_service.domain.context import commands
from context_service.domain.events import ADMIN
from context_service.domain.pack.model import Corpus, Scored
from context_service.domain.score import SCALE, to_micros
from context_service.projections.passage_features.features import embedded_text, text_hash
from tests.projections.pack_support import (
    WHEN,
    caught_up,
    collection,
    digest,
    publish,
    random_records,
)
from tests.support.api_helpers import fresh

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]

QUERIES = ("who was appointed cfo by the board", "budget plan growth", "lisbon office report")


def _write(container: Container, ns: str) -> str:
    """``pack_support.generated_corpus(container, 5, 80)`` in namespace ``ns``: collections
    c0..c3 of 80 random records each, every view caught up; ``ns``."""
    rng = random.Random(5)
    for name in (f"c{i}" for i in range(4)):
        revision = digest(rng)
        collection(container.contexts, name, revision, ns=ns)
        publish(container.contexts, name, revision, random_records(rng, name, revision, 80),
                ns=ns)
    caught_up(container)
    return ns


@pytest.fixture(scope="module")
def ns(module_container: Container) -> str:
    """The namespace of the corpus the module's tests read, written once: no test writes to it
    (the one replacing an index writes a corpus of its own)."""
    return _write(module_container, fresh("ns"))


def _corpus(container: Container, ns: str) -> Corpus:
    ports = pack_ports(container)
    p, _ = ports.inputs.resolve(ns, None, None)
    return ports.corpus.corpus(list(ports.inputs.namespace_at(ns, p).collections.values()))


def _fast(container: Container) -> FastRetrieval:
    retrieval = pack_ports(container).retrieval
    assert isinstance(retrieval, FastRetrieval)
    return retrieval


def _held(container: Container, exact: bool = True) -> tuple[FastRetrieval, VectorMatrices]:
    """A retrieval whose matrices the warmer has loaded; ``exact``: whether it computes the
    candidates' exact cosines in-process (the server agrees with the model) or asks the
    server."""
    ports = pack_ports(container)
    assert isinstance(ports.corpus, CorpusLoader) and isinstance(ports.retrieval, FastRetrieval)
    matrices = VectorMatrices(container.datastore)
    CorpusWarmer(ports.corpus, matrices=matrices).warm()
    assert matrices.exact  # the test server's pgvector is the model's build
    matrices.exact = exact
    plain = ports.retrieval
    return FastRetrieval(plain.loader, plain.datastore, plain.embed,
                         matrices=matrices), matrices


class _Counted:
    """Counts the fetches that took their candidates from the matrices: with the exact cosines
    asked of the server (``rescored``) or computed in-process (``in_process``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.rescored = self.in_process = 0
        rescored = vector_scan.VectorScan._from_matrices
        in_process = vector_scan.MatrixScan.fetch

        def counted_rescored(scan: vector_scan.VectorScan, limit: int) -> vector_scan.Fetched:
            self.rescored += 1
            return rescored(scan, limit)

        def counted_in_process(scan: vector_scan.MatrixScan, limit: int) -> vector_scan.Fetched:
            self.in_process += 1
            return in_process(scan, limit)

        monkeypatch.setattr(vector_scan.VectorScan, "_from_matrices", counted_rescored)
        monkeypatch.setattr(vector_scan.MatrixScan, "fetch", counted_in_process)

    @property
    def calls(self) -> int:
        return self.rescored + self.in_process


def _exact(container: Container, query: str, corpus: Corpus,
           limit: int = 200) -> list[Scored]:
    """The spec's scan, written plainly: every row of exactly these publications."""
    vector = _fast(container).embed(query)
    assert vector is not None
    literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT collection, record_id, 1 - (embedding <=> %s::vector) AS cosine"
                    " FROM agent_passages WHERE publication = ANY(%s)",
                    (literal, [c.publication for c in corpus.values()]))
        rows = [(-to_micros(float(r["cosine"])), r["collection"], bytes(r["record_id"]).decode())
                for r in cur.fetchall()]
    rows = sorted(r for r in rows if -r[0] >= to_micros(0.25))[:limit]
    return [Scored(c, i, -m / SCALE) for m, c, i in rows]


def test_a_part_of_the_corpus_scans_only_its_own_indexes(container: Container, ns: str) -> None:
    whole = _corpus(container, ns)
    by_publication = sorted(whole.values(), key=lambda c: c.publication)
    retrieval = _fast(container)
    parts = {
        "ends of the range, others inside": [by_publication[0], by_publication[3]],
        "one inside": [by_publication[1]],
        "a contiguous run": by_publication[:3],
        "everything": by_publication,
    }
    for label, chosen in parts.items():
        corpus = {c.collection: c for c in chosen}
        for query in QUERIES:
            got = retrieval.vector(query, corpus, None)
            assert got == _exact(container, query, corpus), label
            assert {s.collection for s in got} <= set(corpus), label


@pytest.mark.parametrize("held", ["postgresql", "rescored", "in-process"])
@pytest.mark.parametrize("first_rows", [3, 40])
def test_a_scan_fetches_more_until_nothing_left_out_can_count(
        container: Container, monkeypatch: pytest.MonkeyPatch, ns: str,
        first_rows: int, held: str) -> None:
    corpus = _corpus(container, ns)
    retrieval = (_fast(container) if held == "postgresql"
                 else _held(container, exact=held == "in-process")[0])
    counted = _Counted(monkeypatch)
    monkeypatch.setattr(vector_scan, "FIRST_ROWS", first_rows)  # 3: several rounds each
    for query in QUERIES:
        assert retrieval.vector(query, corpus, None) == _exact(container, query, corpus)
    eligible = frozenset(list(next(iter(corpus.values())).documents)[:5])
    assert retrieval.vector(QUERIES[0], corpus, eligible) == [
        s for s in _exact(container, QUERIES[0], corpus, 10**6)
        if corpus[s.collection].document_of[s.record_id] in eligible][:200]
    # from the matrices, several rounds each; from PostgreSQL, never
    rounds = {"postgresql": 0, "rescored": counted.rescored, "in-process": counted.in_process}
    assert counted.calls == rounds[held]
    assert counted.calls > len(QUERIES) + 1 if held != "postgresql" else counted.calls == 0


def test_every_current_vector_has_its_half_precision_copy(container: Container,
                                                          ns: str) -> None:
    # the corpus's indexes (those of the other corpora are another test's)
    own = [c.publication for c in _corpus(container, ns).values()]
    assert len(own) == 4
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT count(*) AS n FROM agent_passages p JOIN agent_vectors v"
                    " USING (publication, ord) WHERE v.embedding = p.embedding::halfvec(256)"
                    " AND p.publication = ANY(%s)", (own,))
        same = cur.fetchone()["n"]
        cur.execute("SELECT count(*) AS n FROM agent_passages WHERE embedding IS NOT NULL"
                    " AND publication = ANY(%s)", (own,))
        assert same == cur.fetchone()["n"] > 0
        cur.execute("SELECT count(*) AS n FROM agent_vectors WHERE publication = ANY(%s)",
                    (own,))
        assert cur.fetchone()["n"] == same


@pytest.mark.parametrize("exact", [False, True], ids=["rescored", "in-process"])
def test_candidates_from_the_matrices_give_the_exact_scan(
        container: Container, monkeypatch: pytest.MonkeyPatch, ns: str, exact: bool) -> None:
    whole = _corpus(container, ns)
    by_publication = sorted(whole.values(), key=lambda c: c.publication)
    retrieval, matrices = _held(container, exact)
    assert all(matrices.get(c.publication) is not None for c in by_publication)
    counted = _Counted(monkeypatch)
    for chosen in ([by_publication[0], by_publication[3]], by_publication[1:3], by_publication):
        corpus = {c.collection: c for c in chosen}
        for query in QUERIES:
            got = retrieval.vector(query, corpus, None)
            assert got == _exact(container, query, corpus)
            assert retrieval.vector(query, corpus, None) == got  # a second scan, the same list
    # one round each: the first rows were enough
    assert (counted.in_process if exact else counted.rescored) == 3 * len(QUERIES) * 2
    assert counted.calls == 3 * len(QUERIES) * 2


def test_a_scan_of_held_matrices_asks_the_database_nothing(
        container: Container, monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    corpus = _corpus(container, ns)
    retrieval, _ = _held(container)
    expected = {query: _exact(container, query, corpus) for query in QUERIES}

    def refused(*_: object, **__: object) -> None:
        raise AssertionError("the database was asked")

    monkeypatch.setattr(container.datastore, "transaction", refused)
    for query in QUERIES:
        assert retrieval.vector(query, corpus, None) == expected[query]


def test_a_scan_spreads_its_products_over_two_threads_and_gives_the_same_list(
        container: Container, monkeypatch: pytest.MonkeyPatch, ns: str) -> None:
    corpus = _corpus(container, ns)
    retrieval, _ = _held(container)
    alone = {query: retrieval.vector(query, corpus, None) for query in QUERIES}
    assert sum(len(c.passages) for c in corpus.values()) < vector_scan.SPREAD_ROWS
    monkeypatch.setattr(vector_scan, "SPREAD_ROWS", 1)
    spread: list[str] = []
    original = vector_scan._products

    def recorded(*args: Any, **kwargs: Any) -> Any:
        spread.append(threading.current_thread().name)
        return original(*args, **kwargs)

    monkeypatch.setattr(vector_scan, "_products", recorded)
    for query in QUERIES:
        assert retrieval.vector(query, corpus, None) == alone[query]
    assert sum(name.startswith("vector-product") for name in spread) == len(QUERIES)
    retrieval.close()  # shut down: the caller's thread computes every product
    spread.clear()
    assert retrieval.vector(QUERIES[0], corpus, None) == alone[QUERIES[0]]
    assert spread == [threading.current_thread().name]


@pytest.mark.parametrize("answer", ["disagrees", "fails"])
def test_a_server_whose_cosine_is_not_the_models_is_asked_for_every_exact_cosine(
        container: Container, monkeypatch: pytest.MonkeyPatch, ns: str, answer: str) -> None:
    corpus = _corpus(container, ns)

    def disagrees(_: object) -> bool:
        if answer == "fails":
            raise RuntimeError("operator does not exist")
        return False

    monkeypatch.setattr(vector_matrix, "agrees", disagrees)
    ports = pack_ports(container)
    assert isinstance(ports.corpus, CorpusLoader) and isinstance(ports.retrieval, FastRetrieval)
    matrices = VectorMatrices(container.datastore)
    warmer = CorpusWarmer(ports.corpus, matrices=matrices)
    warmer.warm()
    assert matrices.exact is False
    assert dict((n, v) for n, _, _, v in warmer.gauges())["cs_pack_exact_cosine"] == 0
    retrieval = FastRetrieval(ports.retrieval.loader, ports.retrieval.datastore,
                              ports.retrieval.embed, matrices=matrices)
    counted = _Counted(monkeypatch)
    for query in QUERIES:
        assert retrieval.vector(query, corpus, None) == _exact(container, query, corpus)
    assert counted.rescored == len(QUERIES) and counted.in_process == 0


def test_the_matrix_cosines_are_within_the_bound_of_pgvectors(container: Container,
                                                              ns: str) -> None:
    corpus = _corpus(container, ns)
    retrieval, matrices = _held(container)
    for query in QUERIES:
        vector = retrieval.embed(query)
        assert vector is not None
        task = np.asarray(list(vector), dtype=np.float32)
        literal = "[" + ",".join(repr(float(x)) for x in task.tolist()) + "]"
        for one in corpus.values():
            matrix = matrices.get(one.publication)
            assert matrix is not None
            scored = vector_scan.Candidates([matrix], task, None)  # the scans' own cosines
            ours = dict(zip(matrix.ords[scored.rows].tolist(), scored.cosines.tolist(),
                            strict=True))
            with container.datastore.transaction(commit=False) as cur:
                cur.execute("SELECT ord, 1 - (embedding <=> %s::vector) AS cosine"
                            " FROM agent_passages WHERE publication = %s"
                            " AND embedding IS NOT NULL", (literal, one.publication))
                theirs = {r["ord"]: float(r["cosine"]) for r in cur.fetchall()}
            assert ours.keys() == theirs.keys() and theirs
            assert max(abs(ours[k] - theirs[k]) for k in ours) < MATRIX_BOUND / 10


@pytest.mark.parametrize("exact", [False, True], ids=["rescored", "in-process"])
def test_an_index_replaced_since_its_matrix_was_read_gives_the_exact_scan(
        container: Container, monkeypatch: pytest.MonkeyPatch, exact: bool) -> None:
    ns = _write(container, fresh("ns"))  # the module's corpus stays as it is
    old = _corpus(container, ns)
    retrieval, matrices = _held(container, exact)
    replaced = old["c0"].publication
    app = container.contexts
    rng = random.Random(99)
    revision = digest(rng)
    app.execute(ns, "c0", commands.PublishRevision(actor=ADMIN, id=revision, created_at=WHEN,
                                            operation="sync", sources=()))
    publish(app, "c0", revision, random_records(rng, "c0", revision, 50), ns=ns)
    caught_up(container)
    counted = _Counted(monkeypatch)
    # the old corpus asks for an index no longer current: in PostgreSQL its rows are found by
    # text hash; its matrix, still held, holds the same vectors
    expected = _exact_by_hash(container, QUERIES[0], old)
    assert retrieval.vector(QUERIES[0], old, None) == expected
    assert (counted.rescored, counted.in_process) == ((0, 1) if exact else (0, 0))
    CorpusWarmer(retrieval.loader, matrices=matrices).warm()
    assert matrices.get(replaced) is None  # dropped: no longer current
    assert matrices.load(replaced) is None  # and never read again
    assert retrieval.vector(QUERIES[0], old, None) == expected
    assert (counted.rescored, counted.in_process) == ((0, 1) if exact else (0, 0))


def _exact_by_hash(container: Container, query: str, corpus: Corpus) -> list[Scored]:
    """The spec's scan of indexes that may no longer be current: each record's embedded text's
    vector in ``passage_features``."""
    vector = _fast(container).embed(query)
    assert vector is not None
    literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
    rows = []
    with container.datastore.transaction(commit=False) as cur:
        for one in corpus.values():
            for passage in one.passages:
                cur.execute("SELECT 1 - (embedding <=> %s::vector) AS cosine"
                            " FROM passage_features WHERE hash = %s AND embedding IS NOT NULL",
                            (literal, text_hash(embedded_text(passage.record))))
                found = cur.fetchone()
                if found is not None:
                    rows.append((-to_micros(float(found["cosine"])), one.collection,
                                 passage.record.id))
    rows = sorted(r for r in rows if -r[0] >= to_micros(0.25))[:200]
    return [Scored(c, i, -m / SCALE) for m, c, i in rows]


def test_a_layout_is_kept_for_the_same_publications(container: Container, ns: str) -> None:
    corpus = _corpus(container, ns)
    _, matrices = _held(container)
    held = [m for c in corpus.values() if (m := matrices.get(c.publication)) is not None]
    assert len(held) == len(corpus) > 1
    layout = vector_scan.Layout.of(held)
    assert vector_scan.Layout.of(held) is layout
    assert layout.size == sum(map(len, held))
    assert layout.starts == np.cumsum([0, *map(len, held)])[:-1].tolist()
    for i, m in enumerate(held):  # each row's matrix, row and norm, in place
        part = slice(layout.starts[i], layout.starts[i] + len(m))
        assert (layout.owners[part] == i).all()
        assert layout.rows[part].tolist() == list(range(len(m)))
        assert (layout.norms[part] == m.norms).all()
    # a publication read again is the same vectors: the same layout, holding no matrix
    with container.datastore.transaction(commit=False) as cur:
        reread = [vector_matrix.read_matrix(cur, held[0].publication), *held[1:]]
    assert vector_scan.Layout.of(reread) is layout
    assert not any(isinstance(v, vector_matrix.Matrix) for v in vars(layout).values())
    assert vector_scan.Layout.of(held[::-1]) is not layout  # another order, another layout
