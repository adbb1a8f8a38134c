"""The vector scan of a part of the corpus: rows found by a range of publications leave out the
current indexes of other collections inside that range, and equal the exact scan of the spec
(``1 - (a <=> b)`` over exactly the asked publications); the list computed while the caller
works equals the one computed in line."""

from __future__ import annotations

import pytest

from context_service.adapters.pack import retrieval as scan
from context_service.adapters.pack.retrieval import FastRetrieval
from context_service.bootstrap import Container, pack_ports
from context_service.domain.pack.model import Corpus, Scored
from context_service.domain.score import SCALE, to_micros
from tests.projections.pack_support import generated_corpus

pytestmark = pytest.mark.postgres

QUERIES = ("who was appointed cfo by the board", "budget plan growth", "lisbon office report")


def _corpus(container: Container) -> Corpus:
    generated_corpus(container, 5, 80)
    ports = pack_ports(container)
    p, _ = ports.inputs.resolve("ns", None, None)
    return ports.corpus.corpus(list(ports.inputs.namespace_at("ns", p).collections.values()))


def _fast(container: Container) -> FastRetrieval:
    retrieval = pack_ports(container).retrieval
    assert isinstance(retrieval, FastRetrieval)
    return retrieval


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


def test_a_part_of_the_corpus_scans_only_its_own_indexes(container: Container) -> None:
    whole = _corpus(container)
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
            assert retrieval.vector_soon(query, corpus, None).result() == got, label


def test_a_list_asked_for_after_close_is_computed_in_line(container: Container) -> None:
    corpus = _corpus(container)
    retrieval = _fast(container)
    expected = retrieval.vector(QUERIES[0], corpus, None)
    retrieval.close()
    assert retrieval.vector_soon(QUERIES[0], corpus, None).result() == expected


@pytest.mark.parametrize("first_rows", [3, 40])
def test_a_scan_fetches_more_until_nothing_left_out_can_count(
        container: Container, monkeypatch: pytest.MonkeyPatch, first_rows: int) -> None:
    corpus = _corpus(container)
    retrieval = _fast(container)
    monkeypatch.setattr(scan, "FIRST_ROWS", first_rows)  # 3: every list takes several rounds
    for query in QUERIES:
        assert retrieval.vector(query, corpus, None) == _exact(container, query, corpus)
    eligible = frozenset(list(next(iter(corpus.values())).documents)[:5])
    assert retrieval.vector(QUERIES[0], corpus, eligible) == [
        s for s in _exact(container, QUERIES[0], corpus, 10**6)
        if corpus[s.collection].document_of[s.record_id] in eligible][:200]


def test_every_current_vector_has_its_half_precision_copy(container: Container) -> None:
    _corpus(container)
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT count(*) AS n FROM agent_passages p JOIN agent_vectors v"
                    " USING (publication, ord) WHERE v.embedding = p.embedding::halfvec(256)")
        same = cur.fetchone()["n"]
        cur.execute("SELECT count(*) AS n FROM agent_passages WHERE embedding IS NOT NULL")
        assert same == cur.fetchone()["n"] > 0
        cur.execute("SELECT count(*) AS n FROM agent_vectors")
        assert cur.fetchone()["n"] == same
