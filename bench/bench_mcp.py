"""A context pack through MCP (``/mcp``, the SDK's own client over Streamable HTTP) against the
same pack through ``POST /api/agent/v1/context-packs``, in the same run.

    python -m bench.bench_mcp [--records 20000] [--contexts 20] [--tasks 150]

The corpus is ``bench_query``'s, seeded and indexed as ``bench_packs`` does; ``context-service
serve`` runs as its own process (rate limit off). Each task is sent both ways one after the
other, in an order that alternates from task to task, from one asyncio client of each kind
(keep-alive connections). Goal: MCP p50 <= 1.15x the HTTP route's p50. A third way, the same
``tools/call`` posted as one JSON-RPC message by plain httpx, shows the service's share of the
difference apart from the SDK client's (which checks each answer against the output schema).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import random
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from bench.bench_packs import VALID, cache_complete, credential, line, seeded
from bench.bench_query import corpus, queries, vocabulary
from bench.harness import percentile, postgres, served

RPC_HEADERS = {"Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}


def body(task: str) -> dict[str, Any]:
    return {"task": task, "budget": {"maxTokens": 4000}, "asOf": {"validTime": VALID}}


async def measure(base: str, token: str, tasks: list[str]) -> dict[str, list[float]]:
    bearer = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base, headers=bearer, timeout=300) as http, \
            httpx2.AsyncClient(headers=bearer, timeout=300) as raw, \
            Client(streamable_http_client(base + "/mcp", http_client=raw)) as mcp:

        async def via_http(task: str) -> None:
            response = await http.post("/api/agent/v1/context-packs", json=body(task))
            if response.status_code != 200:
                raise RuntimeError(response.text)

        async def via_mcp(task: str) -> None:
            result = await mcp.call_tool("context_pack", body(task))
            if result.is_error:
                raise RuntimeError(result.content)

        async def via_rpc(task: str) -> None:
            response = await http.post("/mcp", headers=RPC_HEADERS, json={
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "context_pack", "arguments": body(task)}})
            if response.status_code != 200 or '"isError":true' in response.text:
                raise RuntimeError(response.text)

        sends: dict[str, Callable[[str], Awaitable[None]]] = {
            "http": via_http, "mcp": via_mcp, "rpc": via_rpc}
        for task in tasks[:10]:  # warm both paths
            for send in sends.values():
                await send(task)
        out: dict[str, list[float]] = {label: [] for label in sends}
        labels = list(sends)
        for i, task in enumerate(tasks[10:]):
            at = i % len(labels)
            for label in labels[at:] + labels[:at]:
                started = time.perf_counter()
                await sends[label](task)
                out[label].append(time.perf_counter() - started)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--contexts", type=int, default=20)
    parser.add_argument("--vocabulary", type=int, default=30_000)
    parser.add_argument("--tasks", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(logging.WARNING)
    rng = random.Random(args.seed)
    vocab = vocabulary(rng, args.vocabulary)
    data = corpus(rng, args.records, args.contexts, vocab)
    tasks = queries(rng, vocab, args.tasks + 10, head=False)
    with postgres() as (url, dirs):
        took = seeded(url, data)
        print(f"{args.records} records over {args.contexts} contexts seeded in {took:.1f}s",
              flush=True)
        env = {"CS_AGENT_RATE_PER_SECOND": "0", "CS_READ_WAIT_SECONDS": "30"}
        with served(url, dirs, workers="projections,query-index", env=env) as server, \
                httpx.Client(base_url=server.url, timeout=300) as client:
            token = credential(client)
            client.post("/api/agent/v1/context-packs", json=body(tasks[0]),
                        headers={"Authorization": f"Bearer {token}"})
            cache_complete(client)
            runs = asyncio.run(measure(server.url, token, tasks))
    print(line("pack via HTTP", runs["http"]))
    print(line("pack via MCP", runs["mcp"]))
    print(line("pack via JSON-RPC", runs["rpc"]))
    ratio = percentile(runs["mcp"], 50) / percentile(runs["http"], 50)
    print(f"MCP p50 / HTTP p50: {ratio:.2f}x (goal <= 1.15x)")
    served_ratio = percentile(runs["rpc"], 50) / percentile(runs["http"], 50)
    print(f"JSON-RPC p50 / HTTP p50: {served_ratio:.2f}x (the service's share)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
