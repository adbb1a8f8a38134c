"""Query latency through HTTP against an in-memory reference, and the index build rate against a
raw COPY of the same rows, in the same run.

    python -m bench.bench_query [--records 100000] [--contexts 50] [--queries 400]

One namespace holds ``--contexts`` memory/knowledge contexts sharing ``--records`` records of 50 to
500 words (Zipf-distributed synthetic vocabulary). Indexes are published through the command
layer: a context of 2,000 such records (~3.5 MB) exceeds the 1 MiB HTTP body limit. Then:

- build: a fresh ``query_index`` runner catches up from position zero (records/s), and
  ``rebuild`` does it again after truncating; compared with COPY of exactly the rows the index
  holds (records and postings, pre-formatted) into unindexed tables of the same columns;
- latency: ``context-service serve`` runs as its own process; typical queries have 1 to 3 terms
  drawn by corpus frequency, skipping the 100 most frequent words (stop words); "head" queries
  contain at least one of those. p50/p99 over HTTP, keep-alive, one client;
- reference: the in-test reference (tests/unit/test_query_reference.py) scores the same records
  in memory for a sample of the same queries (record tokens computed once, up front), and its
  top results are checked against the service's answers.
Goals: typical p99 < 50 ms, service >= 10x faster than the reference, build/COPY >= 0.2.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from bench.harness import median, percentile, postgres, served
from context_service import bootstrap
from context_service.adapters.postgres.views.query_index import postings_copy_text
from context_service.config import Settings
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.events import ADMIN, Subject
from context_service.domain.query.index import layout
from context_service.domain.query.tokenizer import tokenize
from context_service.domain.stream import context_stream
from context_service.domain.workspace.commands import SetMember
from tests.unit.test_query_reference import reference_search

NS = "bench"
OWNER = Subject("user", "bench")
STOP_WORDS = 100
Corpus = dict[str, list[QueryRecord]]


# --- data ----------------------------------------------------------------------------------------


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choices("abcdefghijklmnoprstuvwy", k=rng.randint(3, 10))))
    return sorted(words, key=lambda _: rng.random())


def zipf_weights(size: int, start: int = 0) -> list[float]:
    return [0.0] * start + [1.0 / rank for rank in range(start + 1, size + 1)]


def corpus(rng: random.Random, records: int, contexts: int, vocab: list[str]) -> Corpus:
    pool = rng.choices(vocab, weights=zipf_weights(len(vocab)), k=2_000_000)
    names = [f"ctx-{i:02}" for i in range(contexts)]
    out: Corpus = {name: [] for name in names}
    for i in range(records):
        name = names[i % contexts]
        type_ = "memory" if names.index(name) % 2 == 0 else "knowledge"
        out[name].append(_record(rng, pool, name, type_))
    return out


def _record(rng: random.Random, pool: list[str], name: str, type_: str) -> QueryRecord:
    def words(low: int, high: int) -> list[str]:
        start = rng.randrange(len(pool) - high)
        return pool[start:start + rng.randint(low, high)]

    text = words(50, 500)
    for k in range(0, len(text), 12):
        text[k] = text[k].capitalize()
    return QueryRecord(
        id=f"{rng.getrandbits(64):016x}", context=name, type=type_, revision=_revision(name),
        text=". ".join(" ".join(text[k:k + 12]) for k in range(0, len(text), 12)) + ".",
        title=" ".join(words(3, 8)).title(), keywords=tuple(words(0, 4)),
        source=SourceRef(f"src-{rng.randrange(10)}", "state", _revision("src")),
        file="knowledge/records.jsonl")


def _revision(name: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name).hex * 2


def seed(container: bootstrap.Container, data: Corpus) -> None:
    app = container.contexts
    now = datetime.now(UTC)
    # the owner is a member before it creates anything, so agents may read its collections
    container.workspaces.execute(NS, SetMember(actor=ADMIN, subject=OWNER, role="owner"))
    for name, records in data.items():
        app.execute(NS, name, c.CreateContext(actor=OWNER, name=name, namespace=NS,
                                              type=records[0].type, backend="pvc", size="1Gi",
                                              access_mode="ReadWriteOnce"))
        app.execute(NS, name, c.PublishRevision(actor=OWNER, id=_revision(name), created_at=now,
                                                operation="sync"))
        app.execute(NS, name, c.PublishQueryIndex(actor=OWNER, revision=_revision(name),
                                                  records=tuple(records)))


def queries(rng: random.Random, vocab: list[str], count: int, head: bool) -> list[str]:
    tail = zipf_weights(len(vocab), STOP_WORDS)
    out = []
    for _ in range(count):
        terms = rng.choices(vocab, weights=tail, k=rng.randint(1, 3))
        if head:
            terms[0] = vocab[rng.randrange(STOP_WORDS)]
        out.append(" ".join(terms))
    return out


# --- build and COPY ---------------------------------------------------------------------------


def build_rates(container: bootstrap.Container, total: int) -> tuple[float, float]:
    runner = container.runner_for(["query_index"])
    started = time.perf_counter()
    runner.catch_up()
    build = total / (time.perf_counter() - started)
    started = time.perf_counter()
    runner.rebuild()
    rebuild = total / (time.perf_counter() - started)
    return build, rebuild


def copy_payloads(data: Corpus) -> tuple[list[str], list[str]]:
    """The rows the index holds, as COPY text: records and postings."""
    import msgspec

    enc = msgspec.json.Encoder()
    records: list[str] = []
    postings: list[str] = []
    for name, items in data.items():
        sid = str(context_stream(NS, name).id)
        built = layout(items)
        records.append("".join(
            f"{sid}\t{n}\t{_bytea(r.id)}\t{_bytea(r.source.context)}\t"
            f"{enc.encode(r).decode().replace(chr(92), chr(92) * 2)}\n"
            for n, r in enumerate(built.records)))
        postings.extend(postings_copy_text(sid, built))
    return records, postings


def _bytea(value: str) -> str:
    """A bytea in COPY text: hex input, its backslash doubled."""
    return "\\\\x" + value.encode().hex()


def raw_copy_rate(container: bootstrap.Container, data: Corpus, total: int) -> float:
    records, postings = copy_payloads(data)
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("CREATE TABLE bench_records (LIKE query_records)")
        cur.execute("CREATE TABLE bench_postings (LIKE query_postings)")
    started = time.perf_counter()
    with container.datastore.transaction(commit=True) as cur:
        for table, payload in (
                ("bench_records (stream_id, ord, id, source_context, doc)", records),
                ("bench_postings (stream_id, term, ords, weights)", postings)):
            with cur.copy(f"COPY {table} FROM STDIN") as copy:
                for chunk in payload:
                    copy.write(chunk)
    rate = total / (time.perf_counter() - started)
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("DROP TABLE bench_records, bench_postings")
    return rate


# --- latency ---------------------------------------------------------------------------------


def http_latencies(client: httpx.Client, texts: Sequence[str]) -> tuple[list[float], list[Any]]:
    latencies, answers = [], []
    for text in texts:
        started = time.perf_counter()
        response = client.post(f"/v1/namespaces/{NS}/query", json={"query": text})
        latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(response.text)
        answers.append(response.json())
    return latencies, answers


def reference_latencies(data: Corpus, texts: Sequence[str],
                        answers: Sequence[Any]) -> list[float]:
    candidates = [_wire(r) for name in sorted(data) for r in data[name]]
    interned: dict[str, str] = {}

    def tokens(text: str) -> list[str]:
        return [interned.setdefault(t, t) for t in tokenize(text)]

    prepared = [(tokens(r.title), tokens(" ".join(r.keywords)), tokens(r.text))
                for name in sorted(data) for r in data[name]]
    latencies = []
    for text, answer in zip(texts, answers, strict=True):
        started = time.perf_counter()
        found = reference_search(candidates, text, tokens=prepared)
        latencies.append(time.perf_counter() - started)
        expected = [(s, r["context"], r["id"]) for s, r in found[:20]]
        got = [(i["score"], i["record"]["context"], i["record"]["id"]) for i in answer["items"]]
        if got != expected:
            raise AssertionError(f"service and reference disagree on {text!r}")
    return latencies


def _wire(r: QueryRecord) -> dict[str, Any]:
    return {"id": r.id, "context": r.context, "type": r.type, "revision": r.revision,
            "title": r.title, "text": r.text, "keywords": list(r.keywords),
            "source": {"context": r.source.context, "type": r.source.type,
                       "revision": r.source.revision}}


def _ms(values: list[float], p: float) -> str:
    return f"{percentile(values, p) * 1000:7.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--contexts", type=int, default=50)
    parser.add_argument("--vocabulary", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--reference-queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.perf_counter()
    vocab = vocabulary(rng, args.vocabulary)
    data = corpus(rng, args.records, args.contexts, vocab)
    words = sum(len(r.text.split()) for r in itertools.islice(data[next(iter(data))], 500))
    print(f"{args.records} records over {args.contexts} contexts; "
          f"~{words / min(500, len(data[next(iter(data))])):.0f} words/record; "
          f"generated in {time.perf_counter() - started:.1f}s", flush=True)
    with postgres() as (url, dirs):
        container = bootstrap.build(Settings(), url=url)
        try:
            started = time.perf_counter()
            seed(container, data)
            container.runners["projections"].catch_up()
            print(f"seeded the log in {time.perf_counter() - started:.1f}s", flush=True)
            build, rebuild = build_rates(container, args.records)
            copy = raw_copy_rate(container, data, args.records)
            print(f"index build   {build:10,.0f} records/s  ({build / copy:.2f}x raw COPY)")
            print(f"index rebuild {rebuild:10,.0f} records/s  ({rebuild / copy:.2f}x raw COPY)")
            print(f"raw COPY      {copy:10,.0f} records/s (records + postings rows)", flush=True)
            typical = queries(rng, vocab, args.queries, head=False)
            heads = queries(rng, vocab, max(args.queries // 4, 1), head=True)
            with served(url, dirs, workers="projections,query-index") as server, \
                    httpx.Client(base_url=server.url, timeout=30,
                                 headers={"X-Context-Subject": OWNER.key}) as client:
                http_latencies(client, typical[:20])
                lat, answers = http_latencies(client, typical)
                head_lat, _ = http_latencies(client, heads)
            sample = min(args.reference_queries, len(typical))
            ref = reference_latencies(data, typical[:sample], answers[:sample])
        finally:
            container.close()
    print(f"HTTP typical ({len(lat)} queries): p50 {_ms(lat, 50)}  p99 {_ms(lat, 99)}")
    print(f"HTTP head    ({len(head_lat)} queries): p50 {_ms(head_lat, 50)}  "
          f"p99 {_ms(head_lat, 99)}")
    same = lat[:sample]
    print(f"reference    ({sample} queries): p50 {_ms(ref, 50)}  p99 {_ms(ref, 99)}")
    print(f"speed-up on the same queries: {median(ref) / median(same):.0f}x (median/median), "
          f"{sum(ref) / sum(same):.0f}x (total time)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
