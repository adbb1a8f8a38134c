"""Pack corpus: index publication with and without the features (token counts, embeddings,
agent_data), and the retrieval lists (BM25 in-process, exact cosine scan in PostgreSQL) against
the existing query search, over the same data in the same run.

    python -m bench.bench_corpus [--records 100000] [--contexts 50] [--queries 200]
                                 [--publication-only]

The data is ``bench_query``'s (records of 50 to 500 words, Zipf-distributed vocabulary), its
indexes published through the command layer. Then:

- publication: the query-index worker's views rebuilt from position zero, first the query
  index alone (features off), then the worker's two runners at once, each on its own thread
  as the worker runs them (query_index; passage_features + agent_data): records/s until both
  are done, and ratio (goal >= 0.5x);
- read-your-writes after one more publication (``--fresh`` records, new texts): how long
  until the query route's view has it, with the features in the index's runner (as before) and
  in their own (as now);
- lists: the corpus at the namespace's position loaded once (cold load timed), then per query
  the lexical list and the vector list (task embedded per request) — p50/p95/p99 — against the
  query read port's search (the /v1 query route's work without HTTP) on the same terms;
- the vector scan's variants on the same vectors: vector(256) on the passage row (what is
  used), the same without parallel workers, halfvec(256), and the join through
  passage_features by text hash (the path of an index that is no longer current).
Goals: lexical and vector p95 well under 100 ms (a pack's p95 budget) over 100,000 passages.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections.abc import Callable

import msgspec

from bench.bench_query import NS, _revision, corpus, queries, seed, vocabulary
from bench.bench_query import Corpus as Records
from bench.harness import percentile, postgres
from context_service import bootstrap
from context_service.adapters.pack.vector_scan import FIRST_ROWS, VectorScan
from context_service.adapters.postgres.views.query_index import QueryIndexReadsSql
from context_service.config import Settings
from context_service.domain.pack.model import Corpus
from context_service.domain.query.scoring import query_terms
from context_service.projections.pack_inputs.reads import PackPorts
from context_service.projections.query_index.reads import Search

INDEX_ONLY = ["query_index"]
FEATURES = ["passage_features", "agent_data"]
WITH_FEATURES = INDEX_ONLY + FEATURES


def publication_rate(container: bootstrap.Container, views: list[str], records: int) -> float:
    runner = container.runner_for(views)
    started = time.perf_counter()
    runner.rebuild()
    return records / (time.perf_counter() - started)


def worker_rates(container: bootstrap.Container, records: int) -> tuple[float, float]:
    """Records/s of the worker's two runners rebuilt at once (until both are done), and of
    the query index's runner alone meanwhile."""
    runners = [container.runner_for(INDEX_ONLY), container.runner_for(FEATURES)]
    done: list[float] = [0.0, 0.0]
    started = time.perf_counter()

    def rebuild(i: int) -> None:
        runners[i].rebuild()
        done[i] = time.perf_counter() - started

    threads = [threading.Thread(target=rebuild, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return records / max(done), records / done[0]


def visible_after(container: bootstrap.Container, data: Records, views: list[str]) -> float:
    """Seconds from publishing ``data`` until a runner over ``views`` has applied it."""
    seed(container, data)
    runner = container.runner_for(views)
    started = time.perf_counter()
    runner.catch_up()
    elapsed = time.perf_counter() - started
    container.runner_for(WITH_FEATURES).catch_up()  # whatever else is behind
    return elapsed


def timed(run: Callable[[str], object], texts: list[str]) -> list[float]:
    out = []
    for text in texts:
        started = time.perf_counter()
        run(text)
        out.append(time.perf_counter() - started)
    return out


def line(label: str, values: list[float]) -> str:
    return (f"{label:34} p50 {percentile(values, 50) * 1000:7.2f} ms  "
            f"p95 {percentile(values, 95) * 1000:7.2f} ms  "
            f"p99 {percentile(values, 99) * 1000:7.2f} ms")


def scan_variants(container: bootstrap.Container, ports: PackPorts, corpus_: Corpus,
                  texts: list[str]) -> dict[str, list[float]]:
    """The cosine scan's alternatives, each on the same query vectors."""
    embed = ports.retrieval.embed  # type: ignore[attr-defined]
    vectors = ["[" + ",".join(repr(float(x)) for x in embed(t)) + "]" for t in texts]
    publications = [c.publication for c in corpus_.values()]
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("DROP TABLE IF EXISTS bench_halfvec")
        cur.execute("CREATE TABLE bench_halfvec AS SELECT publication, collection, record_id,"
                    " embedding::halfvec(256) AS embedding FROM agent_passages")
        cur.execute("CREATE INDEX ON bench_halfvec (publication)")
        cur.execute("ANALYZE bench_halfvec")
    sql = ("SELECT * FROM (SELECT collection, record_id, 1 - (embedding <=> %(q)s::{cast})"
           " AS cosine FROM {table} WHERE publication = ANY(%(p)s)"
           " AND embedding IS NOT NULL) s WHERE cosine >= 0.2499 ORDER BY cosine DESC LIMIT 264")
    out: dict[str, list[float]] = {}

    def run(label: str, statement: str, workers: int | None = None) -> None:
        times = []
        with container.datastore.transaction(commit=False) as cur:
            if workers is not None:
                cur.execute(f"SET LOCAL max_parallel_workers_per_gather = {workers}")
            for q in vectors:
                started = time.perf_counter()
                cur.execute(statement, {"q": q, "p": publications})
                cur.fetchall()
                times.append(time.perf_counter() - started)
        out[label] = times

    run("vector(256) on the passage row", sql.format(cast="vector", table="agent_passages"))
    run("  same, no parallel workers", sql.format(cast="vector", table="agent_passages"), 0)
    run("halfvec(256) on the passage row", sql.format(cast="halfvec", table="bench_halfvec"))
    times = []
    with container.datastore.transaction(commit=False) as cur:
        for q in vectors:
            started = time.perf_counter()
            scan = VectorScan(cur, q, corpus_, None)
            scan.current, scan.others, scan.older = [], [], list(corpus_.values())
            scan.fetch(FIRST_ROWS)
            times.append(time.perf_counter() - started)
    out["join passage_features by hash"] = times
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("DROP TABLE bench_halfvec")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--contexts", type=int, default=50)
    parser.add_argument("--vocabulary", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fresh", type=int, default=20_000,
                        help="records of the publication whose visibility is timed")
    parser.add_argument("--publication-only", action="store_true",
                        help="measure the publication rates only (no visibility, no lists)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    vocab = vocabulary(rng, args.vocabulary)
    data = corpus(rng, args.records, args.contexts, vocab)
    with postgres() as (url, _dirs):
        container = bootstrap.build(Settings(), url=url)
        try:
            started = time.perf_counter()
            seed(container, data)
            container.runners["projections"].catch_up()
            print(f"{args.records} records over {args.contexts} contexts seeded in "
                  f"{time.perf_counter() - started:.1f}s", flush=True)
            off = publication_rate(container, INDEX_ONLY, args.records)
            print(f"publication, features off {off:10,.0f} records/s", flush=True)
            on, index_meanwhile = worker_rates(container, args.records)
            print(f"publication, features on  {on:10,.0f} records/s  ({on / off:.2f}x; "
                  f"goal >= 0.5x); the query index meanwhile {index_meanwhile:,.0f} records/s",
                  flush=True)
            if args.publication_only:
                return
            fresh = {name: [msgspec.structs.replace(r, context=name, revision=_revision(name))
                            for r in corpus(rng, args.fresh, 1, vocab)["ctx-00"]]
                     for name in ("fresh-a", "fresh-b")}
            before = visible_after(container, {"fresh-a": fresh["fresh-a"]}, WITH_FEATURES)
            after = visible_after(container, {"fresh-b": fresh["fresh-b"]}, INDEX_ONLY)
            print(f"a {args.fresh}-record publication visible to the query route after "
                  f"{before:.2f}s with the features in its runner, {after:.2f}s in their own",
                  flush=True)
            with container.datastore.transaction(commit=True) as cur:
                cur.execute("ANALYZE agent_passages; ANALYZE passage_features")
            ports = bootstrap.pack_ports(container)
            position, _ = ports.inputs.resolve(NS, None, None)
            started = time.perf_counter()
            at = ports.inputs.namespace_at(NS, position)
            corpus_ = ports.corpus.corpus(list(at.collections.values()))
            loaded = time.perf_counter() - started
            passages = sum(len(c.passages) for c in corpus_.values())
            print(f"corpus at P={position}: {len(corpus_)} collections, {passages} passages, "
                  f"cold load {loaded:.1f}s (once per publication)", flush=True)
            texts = queries(rng, vocab, args.queries, head=False)
            retrieval = ports.retrieval
            for t in texts[:10]:  # warm caches and the model
                retrieval.lexical(t, corpus_, None)
                retrieval.vector(t, corpus_, None)
            lexical = timed(lambda t: retrieval.lexical(t, corpus_, None), texts)
            vector = timed(lambda t: retrieval.vector(t, corpus_, None), texts)
            search = QueryIndexReadsSql(container.datastore)
            names = tuple(sorted(corpus_))
            route = timed(lambda t: search.search(Search(
                NS, names, tuple(query_terms(t).items()))), texts)
            hits = sum(len(retrieval.vector(t, corpus_, None)) for t in texts[:20]) / 20
            with container.datastore.transaction(commit=False) as cur:
                current = VectorScan(cur, "", corpus_, None).current
            assert len(current) == len(corpus_)
            variants = scan_variants(container, ports, corpus_, texts[:60])
        finally:
            container.close()
    print(line(f"lexical list ({len(texts)} queries)", lexical))
    print(line(f"vector list ({len(texts)} queries)", vector) + f"  (~{hits:.0f} hits/list)")
    print(line("query search, same terms", route))
    p95 = percentile(route, 95)
    print(f"p95 vs query search: lexical {percentile(lexical, 95) / p95:.2f}x, "
          f"vector {percentile(vector, 95) / p95:.2f}x")
    print("vector scan variants (60 queries, SQL only):")
    for label, values in variants.items():
        print("  " + line(label, values))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
