"""Context packs and replays through HTTP, against the query route on the same terms, in the
same run.

    python -m bench.bench_packs [--records 100000] [--contexts 50] [--tasks 200]

The data is ``bench_query``'s (records of 50 to 500 words, Zipf-distributed vocabulary), its
indexes published through the command layer and their features computed by the query-index
worker before anything is timed. ``context-service serve`` then runs as its own process
(rate limit off) and one keep-alive client sends:

- packs: ``--tasks`` varied tasks (1 to 3 terms, as the query benchmark draws them) with a
  4,000-token budget, ``hybrid`` and ``lexical``: p50/p95/p99, and the query route's p95 on the
  same terms for the ratio; each task is sent in the three ways one after another, in an order
  that rotates from task to task;
- replays: ``verify`` of packs of about 50 items (a 32,000-token budget): p50/p95/p99;
- the longest tasks a request may send (``--long-tasks`` of 4,000 characters, uniformly drawn
  words), ``hybrid`` and ``lexical``: what one request can cost at most;
- while the service loads every index after its start (until the first pack is answered), a
  second client sends the query route every 50 ms: its p95 then against its p95 once loaded,
  what the loads cost the process's other requests.
Goals: hybrid p95 < 100 ms and <= 3x the query route's p95; verify p95 < 50 ms.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import random
import re
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from bench.bench_query import NS, OWNER, corpus, queries, seed, vocabulary
from bench.harness import percentile, postgres, served
from context_service import bootstrap
from context_service.config import Settings
from context_service.http.agent.packs_shapes import MAX_TASK

ADMIN = {"X-Context-Subject": "service:context-service-admin"}
VALID = "2025-01-01T00:00:00Z"


PARTS: dict[str, list[float]] = {}


def timed(send: Callable[[str], httpx.Response], texts: list[str],
          label: str = "") -> list[float]:
    """Client-side seconds per request; the service's Server-Timing parts kept by label."""
    out = []
    for text in texts:
        started = time.perf_counter()
        response = send(text)
        out.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(response.text)
        for part in filter(None, response.headers.get("Server-Timing", "").split(", ")):
            name, _, dur = part.partition(";dur=")
            PARTS.setdefault(f"{label} {name}", []).append(float(dur) / 1000)
    return out


def interleaved(sends: dict[str, Callable[[str], httpx.Response]],
                texts: list[str]) -> dict[str, list[float]]:
    """``timed`` for each labelled send, the sends of one text one after another in an order
    that rotates from text to text: every label meets the same moments of a shared machine,
    so a burst of other work cannot land on one side of a ratio only."""
    labels = list(sends)
    out: dict[str, list[float]] = {label: [] for label in labels}
    for i, text in enumerate(texts):
        at = i % len(labels)
        for label in labels[at:] + labels[:at]:
            out[label] += timed(sends[label], [text], label)
    return out


def while_loading(send: Callable[[str], httpx.Response], texts: list[str],
                  loaded: threading.Event, pause: float = 0.05) -> list[float]:
    """Seconds per request of ``send`` over ``texts`` in turn, one every ``pause`` seconds,
    until ``loaded``: what another caller meets while the service loads the indexes."""
    out: list[float] = []
    for i in itertools.count():
        if loaded.wait(pause):
            return out
        started = time.perf_counter()
        response = send(texts[i % len(texts)])
        out.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(response.text)
    return out


def longest_task(rng: random.Random, vocab: list[str]) -> str:
    """A task as long as a request may send: words of the vocabulary drawn uniformly (rare
    words: every one a term to score) up to ``MAX_TASK`` characters."""
    words: list[str] = []
    size = -1
    while True:
        word = rng.choice(vocab)
        if size + 1 + len(word) > MAX_TASK:
            return " ".join(words)
        words.append(word)
        size += 1 + len(word)


def line(label: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (f"{label:<24} n={len(ms):<4} p50 {percentile(ms, 50):7.1f} ms  "
            f"p95 {percentile(ms, 95):7.1f} ms  p99 {percentile(ms, 99):7.1f} ms")


def credential(client: httpx.Client) -> str:
    member = client.put(f"/v1/namespaces/{NS}/members", headers=ADMIN,
                        json={"subject": {"kind": OWNER.kind, "name": OWNER.name},
                              "role": "owner"})
    assert member.status_code == 200, member.text
    made = client.post(f"/api/w/{NS}/agent-credentials",
                       headers={"X-Context-Subject": OWNER.key},
                       json={"name": "bench", "scopes": ["context:read"], "expiresInDays": 1})
    assert made.status_code == 201, made.text
    token: str = made.json()["token"]
    return token


def seeded(url: str, data: Any) -> float:
    """Seed the corpus into the database and bring every view up to date; the seconds taken."""
    container = bootstrap.build(Settings(), url=url)
    try:
        started = time.perf_counter()
        seed(container, data)
        for runner in container.runners.values():
            runner.catch_up()
        return time.perf_counter() - started
    finally:
        container.close()


def first_answer(send: Callable[[str], httpx.Response], task: str) -> tuple[float, int]:
    """Seconds until ``task`` is answered 200, trying again after each 503 as its
    ``Retry-After`` says; and how many tries were refused so."""
    started, refused = time.perf_counter(), 0
    while (response := send(task)).status_code == 503:
        refused += 1
        time.sleep(float(response.headers.get("Retry-After", "1")))
    if response.status_code != 200:
        raise RuntimeError(response.text)
    return time.perf_counter() - started, refused


def cache_complete(client: httpx.Client, limit_s: float = 600.0) -> float:
    """Wait until the service says every current index is held whole (corpus and vectors):
    packs are timed at full speed, not while the warmer still reads. Seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        if re.search(r"^cs_pack_cache_complete 1(\.0)?$", client.get("/metrics").text, re.M):
            return time.monotonic() - started
        time.sleep(0.5)
    raise SystemExit("the pack caches did not complete in time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--contexts", type=int, default=50)
    parser.add_argument("--vocabulary", type=int, default=30_000)
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--replays", type=int, default=40)
    parser.add_argument("--long-tasks", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)
    rng = random.Random(args.seed)
    vocab = vocabulary(rng, args.vocabulary)
    data = corpus(rng, args.records, args.contexts, vocab)
    tasks = queries(rng, vocab, args.tasks, head=False)
    longest = [longest_task(rng, vocab) for _ in range(args.long_tasks)]
    with postgres() as (url, dirs):
        took = seeded(url, data)
        print(f"{args.records} records over {args.contexts} contexts seeded, features "
              f"computed in {took:.1f}s", flush=True)
        env = {"CS_AGENT_RATE_PER_SECOND": "0", "CS_READ_WAIT_SECONDS": "30"}
        with served(url, dirs, workers="projections,query-index", env=env) as server, \
                httpx.Client(base_url=server.url, timeout=300) as client:
            bearer = {"Authorization": f"Bearer {credential(client)}"}

            def pack(retrieval: str, max_tokens: int = 4000) -> Callable[[str], httpx.Response]:
                return lambda task: client.post(
                    "/api/agent/v1/context-packs", headers=bearer,
                    json={"task": task, "budget": {"maxTokens": max_tokens},
                          "asOf": {"validTime": VALID}, "retrieval": retrieval})

            def query(text: str) -> httpx.Response:
                return client.post(f"/v1/namespaces/{NS}/query", json={"query": text},
                                   headers={"X-Context-Subject": OWNER.key})

            # warm: the corpus loads once per publication, so the first pack after the start
            # waits for every index's load (the warmer's, under way): each try answers 503
            # (Retry-After) once the read wait has run out, and the client tries again
            # meanwhile another caller sends the query route (no index load of its own): what
            # the loads cost everyone else
            loaded = threading.Event()
            with httpx.Client(base_url=server.url, timeout=300) as other, \
                    ThreadPoolExecutor(1) as beside:
                timing = beside.submit(while_loading, lambda text: other.post(
                    f"/v1/namespaces/{NS}/query", json={"query": text},
                    headers={"X-Context-Subject": OWNER.key}), tasks, loaded)
                try:
                    first, refused = first_answer(pack("hybrid"), tasks[0])
                finally:
                    loaded.set()
                during = timing.result()  # its failure is the benchmark's
            print(f"first pack after the start: {first:.1f}s (every index loaded; "
                  f"{refused} earlier tries answered 503 after the read wait)", flush=True)
            timed(pack("hybrid"), tasks[1:10])
            warmed = cache_complete(client)
            print(f"pack caches complete after {warmed:.1f}s more", flush=True)
            timed(query, tasks[:10])
            runs = interleaved({"hybrid": pack("hybrid"), "lexical": pack("lexical"),
                                "query": query}, tasks)
            hybrid, lexical, queried = runs["hybrid"], runs["lexical"], runs["query"]
            big = [pack("hybrid", 32000)(t).json() for t in tasks[:args.replays]]
            items = sorted(len(p["items"]) for p in big)

            def verify(replay_id: str) -> httpx.Response:
                return client.post(f"/api/agent/v1/replays/{replay_id}", headers=bearer,
                                   json={"mode": "verify"})

            verified = timed(verify, [p["replayId"] for p in big], "verify")
            longer = interleaved({"long hybrid": pack("hybrid"), "long lexical": pack("lexical")},
                                 longest)
    print(line("pack hybrid", hybrid))
    print(line("pack lexical", lexical))
    print(line("query route", queried))
    if during:
        print(line("query route while the indexes load", during))
        print(f"query p95 while the indexes load / after: "
              f"{percentile(during, 95) / percentile(queried, 95):.2f}x")
    ratio = percentile(hybrid, 95) / percentile(queried, 95)
    print(f"hybrid p95 / query p95: {ratio:.2f}x (goal <= 3x)")
    print(line(f"verify ({items[len(items) // 2]} items)", verified))
    print(f"tasks of {MAX_TASK:,} characters (the longest a request may send), "
          f"{len(longest)} of them:")
    for label, values in longer.items():
        print(line(f"  {label}", values))
    for label, values in PARTS.items():
        print(line(f"  server {label}", values))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
