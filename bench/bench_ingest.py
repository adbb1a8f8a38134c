"""Ingestion throughput: ``contextctl ingest`` (the Python function the command calls) from files
on disk to a searchable index of a served process, for Markdown and for PDF, and the calls it
makes to anything other than the service (models, other hosts): zero.

    python -m bench.bench_ingest [--markdown-mb 4] [--pdf-mb 1]

The corpora are generated (seeded): Markdown files of headings, paragraphs, lists and code, and
PDFs of pages of text with an outline. Per format:

- end to end: from the call to the moment the query route finds a word of the last file — MB of
  input files per second, and the local part (read, parse, split, count tokens) apart from the
  service's (publish the revision, upload the index in parts);
- again with the same files: nothing to record (the idempotent path), its time;
- calls: HTTP requests to the service, and connections to or name lookups of any other host
  (counted by wrapping the socket functions in this process): zero expected; no model is called
  or loaded (only the tokenizer's file is read, to count tokens).
Figures are printed; there are no thresholds.
"""

from __future__ import annotations

import argparse
import random
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.harness import postgres, served
from context_service.contextctl.client import Client
from context_service.contextctl.ingestion import IngestReport, ingest
from context_service.contextctl.settings import Settings
from tests.contextctl.ingest_fixture import pdf_bytes

NS = "bench-ingest"
WORDS = ("ledger", "tenant", "replica", "failover", "invoice", "quota", "region", "rollback",
         "canary", "runbook", "backup", "restore", "latency", "shard", "cursor", "audit",
         "rotation", "policy", "deploy", "incident", "schedule", "release", "token", "index",
         "the", "a", "of", "to", "and", "in", "is", "for", "on", "with", "by", "at", "from")


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(8, 24))).capitalize() + "."


def markdown_file(rng: random.Random, number: int) -> str:
    parts = [f"# Handbook {number}\n"]
    for section in range(rng.randint(4, 10)):
        parts.append(f"## Section {section} {rng.choice(WORDS)}\n")
        for _ in range(rng.randint(1, 4)):
            parts.append(" ".join(sentence(rng) for _ in range(rng.randint(2, 7))) + "\n")
        if rng.random() < 0.5:
            parts.append("".join(f"- {sentence(rng)}\n" for _ in range(rng.randint(2, 6))))
        if rng.random() < 0.2:
            parts.append("```sh\n" + "\n".join(f"ctl {rng.choice(WORDS)} --{rng.choice(WORDS)}"
                                               for _ in range(5)) + "\n```\n")
    return "\n".join(parts)


def pdf_file(rng: random.Random, marker: str) -> bytes:
    pages = [[sentence(rng) for _ in range(rng.randint(20, 40))] for _ in range(rng.randint(2, 6))]
    pages[-1].append(f"Last words: {marker}.")
    return pdf_bytes(pages, [f"Chapter {n}" for n in range(len(pages))])


def corpus(folder: Path, kind: str, megabytes: float, seed: int = 7) -> tuple[int, int, str]:
    """Files of ``kind`` until ``megabytes`` are written: (files, bytes, a word of the last)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    written = count = 0
    marker = ""
    while written < megabytes * 1_000_000:
        count += 1
        marker = f"zq{count}marker"
        sub = folder / f"part-{count % 8}"
        sub.mkdir(exist_ok=True)
        if kind == "markdown":
            data = (markdown_file(rng, count) + f"\nLast words: {marker}.\n").encode()
            path = sub / f"doc-{count}.md"
        else:
            data = pdf_file(rng, marker)
            path = sub / f"doc-{count}.pdf"
        path.write_bytes(data)
        written += len(data)
    return count, written, marker


@dataclass
class Calls:
    """What this process connected to or looked up while ingesting."""

    service: str
    requests: int = 0
    other_connections: list[str] = field(default_factory=list)
    other_lookups: list[str] = field(default_factory=list)


@contextmanager
def counted(service_host: str) -> Iterator[Calls]:
    calls = Calls(service_host)
    connect, lookup = socket.socket.connect, socket.getaddrinfo

    def watched_connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else str(address)
        if host not in (service_host, "127.0.0.1", "::1", "localhost"):
            calls.other_connections.append(str(host))
        return connect(self, address)

    def watched_lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in (service_host, "127.0.0.1", "::1", "localhost", None):
            calls.other_lookups.append(str(host))
        return lookup(host, *args, **kwargs)

    socket.socket.connect = watched_connect  # type: ignore[method-assign,assignment]
    socket.getaddrinfo = watched_lookup
    try:
        yield calls
    finally:
        socket.socket.connect = connect  # type: ignore[method-assign]
        socket.getaddrinfo = lookup


class Counting(httpx.HTTPTransport):
    def __init__(self, calls: Calls) -> None:
        super().__init__()
        self.calls = calls

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.calls.requests += 1
        return super().handle_request(request)


@dataclass
class Run:
    report: IngestReport
    total: float  # seconds, the call
    searchable: float  # seconds, until the query route finds the last file's word
    local: float  # seconds, the same files read, parsed and split without the service


def run(url: str, folder: Path, context: str, marker: str, calls: Calls) -> Run:
    settings = Settings(url=url, subject="user:bench", namespace=NS, timeout=300.0)
    client = Client(settings, transport=Counting(calls))
    try:
        started = time.perf_counter()
        report = ingest([folder], context=context, create=True, client=client,
                        settings=settings)
        total = time.perf_counter() - started
        found = client.post(f"/v1/namespaces/{NS}/query",
                            {"contexts": [context], "query": marker, "limit": 1}).data
        searchable = time.perf_counter() - started
        assert found["items"], f"{marker} not found in {context}"
    finally:
        client.close()
    started = time.perf_counter()
    ingest([folder], context=context, dry_run=True, settings=settings)
    return Run(report, total, searchable, time.perf_counter() - started)


def again(url: str, folder: Path, context: str) -> tuple[IngestReport, float]:
    settings = Settings(url=url, subject="user:bench", namespace=NS, timeout=300.0)
    started = time.perf_counter()
    report = ingest([folder], context=context, settings=settings)
    return report, time.perf_counter() - started


def figures(kind: str, files: int, size: int, first: Run, second: tuple[IngestReport, float],
            calls: Calls) -> None:
    mb = size / 1_000_000
    report = first.report
    print(f"\n{kind}: {files} files, {mb:.2f} MB -> {report.passages:,} passages, "
          f"{report.tokens:,} tokens (at most {report.parameters['maxTokens']} a passage)")
    print(f"  end to end, to a searchable index: {first.searchable:.2f} s = "
          f"{mb / first.searchable:.2f} MB/s ({report.passages / first.searchable:,.0f} "
          "passages/s)")
    print(f"  of which local (read, parse, split, count): {first.local:.2f} s = "
          f"{mb / first.local:.2f} MB/s; service (publish, upload, index): "
          f"{max(first.searchable - first.local, 0):.2f} s")
    print(f"  same files again: {second[1]:.2f} s, outcome {second[0].outcome}")
    print(f"  requests to the service: {calls.requests}; connections to other hosts: "
          f"{len(calls.other_connections)}; name lookups of other hosts: "
          f"{len(calls.other_lookups)}; model calls: 0 (no model is loaded: "
          f"wordllama imported = {'wordllama' in sys.modules})")


def measure(url: str, root: Path, kind: str, megabytes: float) -> None:
    folder = root / kind
    files, size, marker = corpus(folder, kind, megabytes)
    host = httpx.URL(url).host
    with counted(host) as calls:
        first = run(url, folder, f"ingest-{kind}", marker, calls)
        second = again(url, folder, f"ingest-{kind}")
    figures(kind, files, size, first, second, calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--markdown-mb", type=float, default=4.0)
    parser.add_argument("--pdf-mb", type=float, default=1.0)
    args = parser.parse_args(argv)
    measures: list[tuple[str, float]] = [("markdown", args.markdown_mb), ("pdf", args.pdf_mb)]
    with postgres() as (db, data), served(db, data, workers="projections,query-index") as server:
        root = Path(tempfile.mkdtemp(prefix="cs-bench-ingest-", dir=data))
        for kind, megabytes in measures:
            measure(server.url, root, kind, megabytes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
