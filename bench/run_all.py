"""Run every benchmark in turn with its default sizes (``make bench``); each prints its own
figures as ratios against a baseline measured in the same run.

    python -m bench.run_all [--only NAME ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

BENCHES = {
    "writes": "write throughput (1 and 16 clients) vs raw psycopg insert-and-commit",
    "rebuild": "projection rebuild rate vs reading the raw notification log",
    "ryw": "read-your-writes lag at 200 writes/s",
    "query": "query latency over 100,000 records vs an in-memory reference; index build vs COPY",
    "relay": "relay catch-up over 100,000 events vs raw JetStream publishing",
    "event_latency": "event-to-subscriber latency at 200 writes/s",
    "pools": "POST /v1/sandbox-pools to ready vs creating the objects directly",
    "resync": "reconciler resync over 1,000 unchanged pools (time, API calls, writes)",
    "agent": "credential creates vs context creates; agent read latency vs the /v1 read",
    "corpus": "index publication with vs without features; pack retrieval lists vs query search",
    "packs": "context packs (hybrid, lexical) vs the query route; replay verify, over HTTP",
    "exact_cosine": "the in-process exact cosine of 200-1,200 candidates vs asking pgvector",
    "recall": "planted-passage recall of packs, hybrid vs lexical (own words and synonyms)",
    "retrieval": "LoCoMo evidence recall and Cranfield nDCG@10 of packs vs a plain BM25",
    "ingest": "contextctl ingest MB/s (Markdown, PDF) to a searchable index; outside calls",
    "local": "contextctl's local store: capture MB/s vs hashing alone; local query vs the raw read",
    "mcp": "a context pack through MCP (SDK client, JSON-RPC) vs the same pack over HTTP",
    "templates": "template run overhead vs the same SQL on the service connection; timeout",
    "fields": "fields/query over 10,000 documents (list, grouped aggregate) vs hand-written SQL",
    "typed_body": "a route's typed body (documented, decoded by the route) vs its raw body read",
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", choices=sorted(BENCHES), default=None)
    args = parser.parse_args()
    failed = []
    for name in args.only or BENCHES:
        print(f"\n== {name}: {BENCHES[name]}", flush=True)
        done = subprocess.run([sys.executable, "-m", f"bench.bench_{name}"], check=False)
        if done.returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
