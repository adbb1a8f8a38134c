"""The exact cosine model against the running PostgreSQL's pgvector: vectors stored the way
indexes store them (binary COPY) and tasks sent as the vector scan sends them (text) give, for
``embedding <=> task``, exactly the bits of ``distances``: random vectors of mixed scales, real
embeddings of the project's model, and edge cases (a zero vector, copies, opposites, subnormal
and overflowing squares, sums landing on float32 midpoints); ``agrees`` says so too, and says
otherwise for a model summing the lanes in another order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
from psycopg.rows import dict_row, tuple_row

from context_service.adapters.embedding.wordllama_model import TextFeaturesModel, load
from context_service.adapters.pack import exact_cosine
from context_service.adapters.pack.exact_cosine import agrees, distances, same, square_norms
from context_service.adapters.postgres.views.features import pg_vector
from context_service.projections.passage_features.features import Text
from tests.support.cosine_cases import edge_rows, midpoint_rows, mixed_rows

pytestmark = pytest.mark.postgres

WORDS = """
revenue cfo appointed board march quarter plan budget growth risk audit report office
lisbon berlin tokyo customer contract renewal churn forecast hiring engineer platform
kubernetes cluster storage volume snapshot latency incident outage postmortem release
roadmap pricing discount invoice payment supplier logistics warehouse inventory shipping
compliance privacy security credential rotation token access review policy memory
context agent session sandbox workspace index query passage document vector ranking the
of and to in for on with by from at is was were has had will not since when who Straße
東京 café naïve 2025 2026 q1 q2 q3 q4 eur usd 12% 3.5m
"""
VOCABULARY = WORDS.split()
QUERIES = ("who was appointed cfo by the board", "budget plan growth", "lisbon office report",
           "kubernetes storage snapshot latency incident")


@pytest.fixture
def conn(database_url: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(database_url, row_factory=dict_row) as connection:
        yield connection


def _server(conn: psycopg.Connection[Any], rows: np.ndarray,
            tasks: list[np.ndarray]) -> list[np.ndarray]:
    """``embedding <=> task`` of each stored row, for each task, as PostgreSQL computes it."""
    with conn.cursor() as cur:
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS stored"
                    " (id int4 PRIMARY KEY, embedding vector(256))")
        cur.execute("TRUNCATE stored")
        with cur.copy("COPY stored (id, embedding) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "bytea"])
            for i, row in enumerate(rows):
                copy.write_row((i, pg_vector(row.astype(">f4").tobytes())))
        found = []
        for task in tasks:
            literal = "[" + ",".join(repr(float(x)) for x in task.tolist()) + "]"
            cur.execute("SELECT embedding <=> %s::vector AS distance FROM stored ORDER BY id",
                        (literal,))
            found.append(np.asarray([float(r["distance"]) for r in cur.fetchall()]))
    return found


def _model(rows: np.ndarray, tasks: list[np.ndarray]) -> list[np.ndarray]:
    norms = square_norms(rows)
    return [distances(rows, norms, task) for task in tasks]


def _assert_same(conn: psycopg.Connection[Any], rows: np.ndarray,
                 tasks: list[np.ndarray]) -> list[np.ndarray]:
    theirs = _server(conn, rows, tasks)
    ours = _model(rows, tasks)
    for task_index, (found, expected) in enumerate(zip(ours, theirs, strict=True)):
        differing = np.flatnonzero(found.view(np.int64) != expected.view(np.int64))
        assert same(found, expected), (task_index, differing[:5].tolist())
    return ours


def test_random_vectors_of_mixed_scales_get_pgvectors_bits(
        conn: psycopg.Connection[Any]) -> None:
    rng = np.random.default_rng(21)
    rows = mixed_rows(rng, 3000)
    unit = rng.standard_normal(256)
    tasks = [(unit / np.linalg.norm(unit)).astype(np.float32),
             (unit * 1e-3).astype(np.float32), (unit * 1e3).astype(np.float32),
             (unit * 10.0 ** rng.uniform(-2, 2, 256)).astype(np.float32), rows[17]]
    ours = _assert_same(conn, rows, tasks)
    assert all(len(np.unique(d)) > 2500 for d in ours[:4])  # thousands of distinct values


def test_real_embeddings_get_pgvectors_bits(conn: psycopg.Connection[Any]) -> None:
    rng = np.random.default_rng(22)
    texts = []
    for _ in range(300):
        words = " ".join(rng.choice(VOCABULARY, size=int(rng.integers(1, 60))))
        title = " ".join(rng.choice(VOCABULARY, size=int(rng.integers(0, 4))))
        texts.append(Text((title, words), "\n", embed=True) if title
                     else Text((words,), embed=True))
    features = TextFeaturesModel().features(texts)
    stored = [f.vector for f in features if f.vector is not None]
    rows = np.frombuffer(b"".join(stored), dtype=">f4").astype(np.float32).reshape(-1, 256)
    tasks = [task for q in QUERIES if (task := load().embed(q)) is not None]
    assert len(rows) > 250 and len(tasks) == len(QUERIES)
    ours = _assert_same(conn, rows, tasks)
    assert all(0.0 < float(np.median(d)) < 1.0 for d in ours)


def test_edge_cases_and_midpoint_sums_get_pgvectors_bits(
        conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(23)
    task = rng.standard_normal(256).astype(np.float32)
    edges = edge_rows(task, rng)
    ours = _assert_same(conn, edges, [task, (task * 1e-30).astype(np.float32)])[0]
    assert np.isnan(ours[0]) and ours[1] == 0.0 and ours[2] == 2.0
    assert (ours[3:43] == 0.0).any()  # copies whose similarity passes 1
    crossing, crossing_task = midpoint_rows(rng, 200)
    exact = _assert_same(conn, crossing, [crossing_task])[0]
    # rounding float64's sum by a plain cast gets some of these rows wrong: pgvector does not
    monkeypatch.setattr(exact_cosine, "_rounded", lambda p, c: (p + c).astype(np.float32))
    assert not same(_model(crossing, [crossing_task])[0], exact)


def test_agrees_with_the_server_and_not_with_another_lane_order(
        conn: psycopg.Connection[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    with conn.cursor() as cur:
        assert agrees(cur)
    with conn.cursor(row_factory=tuple_row) as cur:
        assert agrees(cur)
    monkeypatch.setattr(exact_cosine, "_reduced",
                        lambda lanes: lanes.sum(axis=1, dtype=np.float32))
    with conn.cursor() as cur:
        assert not agrees(cur)
    monkeypatch.setattr(exact_cosine, "_reduced",
                        lambda lanes: np.add.accumulate(lanes, axis=1)[:, -1])
    with conn.cursor() as cur:
        assert not agrees(cur)
