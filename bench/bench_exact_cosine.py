"""The exact cosine model (``exact_cosine.distances``) against asking PostgreSQL for the same
``embedding <=> task`` of the candidates, as the vector scan does when the server disagrees
with the model, on real embeddings.

    python -m bench.bench_exact_cosine [--rows 1200] [--tasks 20]

Passages are ``bench_query``'s records embedded by the project's model and stored as
``vector(256)``; tasks are its queries, embedded. Per candidate count n (200, 300, 1,200, the
rows taken at random) and task: the model's time in-process, best of 5, and the server's
(the query by ids over ``unnest`` with its round trip), best of 5; every result is checked
bit for bit. Also: ``agrees`` at start, and ``square_norms`` per 1,000 rows (once per matrix).
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import psycopg
from psycopg.rows import dict_row

from bench.bench_query import corpus, queries, vocabulary
from bench.harness import postgres
from context_service.adapters.embedding.wordllama_model import TextFeaturesModel, load
from context_service.adapters.pack.exact_cosine import agrees, distances, same, square_norms
from context_service.adapters.postgres.views.features import pg_vector
from context_service.projections.passage_features.features import embedded_parts

COUNTS = (200, 300, 1200)


def best_of(runs: int, work: Callable[..., Any], *args: Any) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = work(*args)
        best = min(best, time.perf_counter() - started)
    return best, result


def server_distances(conn: psycopg.Connection[Any], ids: np.ndarray,
                     task: np.ndarray) -> np.ndarray:
    """What the vector scan asks today: the candidates' ``<=>`` by id, in their order."""
    literal = "[" + ",".join(repr(float(x)) for x in task.tolist()) + "]"
    found = conn.execute(
        "SELECT s.embedding <=> %s::vector AS distance FROM unnest(%s::int4[])"
        " WITH ORDINALITY AS k(id, i) JOIN stored s USING (id) ORDER BY k.i",
        (literal, ids.tolist())).fetchall()
    return np.asarray([float(r["distance"]) for r in found])


def embedded_rows(count: int, rng: random.Random) -> np.ndarray:
    records = [r for rs in corpus(rng, count, 4, vocabulary(rng, 5000)).values() for r in rs]
    features = TextFeaturesModel().features([embedded_parts(r) for r in records])
    vectors = b"".join(f.vector for f in features if f.vector is not None)
    return np.frombuffer(vectors, dtype=">f4").astype(np.float32).reshape(-1, 256)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1200)
    parser.add_argument("--tasks", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(5)
    rows = embedded_rows(max(args.rows, max(COUNTS)), rng)
    tasks = [v for q in queries(rng, vocabulary(random.Random(5), 5000), args.tasks * 2, False)
             if (v := load().embed(q)) is not None][:args.tasks]
    with postgres() as (url, _), psycopg.connect(url, row_factory=dict_row,
                                                 autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE stored (id int4 PRIMARY KEY, embedding vector(256))")
        with conn.cursor() as cur, cur.copy("COPY stored FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "bytea"])
            for i, row in enumerate(rows):
                copy.write_row((i, pg_vector(row.astype(">f4").tobytes())))
        with conn.cursor() as cur:
            took, agreed = best_of(1, agrees, cur)
        print(f"agrees: {agreed} ({took * 1e3:.0f} ms)")
        took, norms = best_of(5, square_norms, rows)
        print(f"square_norms: {took * 1e3 / len(rows) * 1000:.2f} ms per 1,000 rows")
        picker = np.random.default_rng(5)
        for n in COUNTS:
            model_ms, server_ms = [], []
            for task in tasks:
                ids = picker.choice(len(rows), size=n, replace=False)
                chosen, chosen_norms = rows[ids], norms[ids]
                took, ours = best_of(5, distances, chosen, chosen_norms, task)
                model_ms.append(took * 1e3)
                took, theirs = best_of(5, server_distances, conn, ids, task)
                server_ms.append(took * 1e3)
                assert same(ours, theirs), f"n={n}: the model differs from the server"
            print(f"n={n:5}: model median {np.median(model_ms):.2f} ms (best {min(model_ms):.2f})"
                  f", server median {np.median(server_ms):.2f} ms"
                  f" (best {min(server_ms):.2f}); {len(tasks)} tasks, all bit for bit")


if __name__ == "__main__":
    main()
