"""Agent API benchmarks, each against a baseline in the same run:

- credential creation vs context creation, 16 clients (both record one event);
- agent read latency: ``POST /api/agent/v1/context-sets/get`` (the whole bearer pipeline) vs the
  same set read through ``GET /v1/namespaces/{ns}/context-sets/{id}``, 16 clients, p50/p99.

    python -m bench.bench_agent [--ops 3200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import httpx

from bench.harness import light_clients, percentile, postgres, run_concurrently, served

ADMIN = "X-Context-Subject: service:context-service-admin\r\n"
CLIENTS = 16


def credential_creates(base: str, ops: int, tag: str) -> float:
    """Credentials created as the bootstrap administrator, 40 per workspace (under the cap)."""
    def work(client: int, i: int) -> None:
        body = json.dumps({"name": f"agent {i}", "scopes": ["context:read"],
                           "expiresInDays": 30}).encode()
        status, payload = conns[client].request(
            "POST", f"/api/w/{tag}-{client}-{i // 40}/agent-credentials", body, ADMIN)
        assert status == 201, payload

    with light_clients(base) as (conns, connect):
        return run_concurrently(CLIENTS, ops // CLIENTS, work, connect)


def context_creates(base: str, ops: int, tag: str) -> float:
    def work(client: int, i: int) -> None:
        body = json.dumps({"name": f"{tag}-{client}-{i}", "namespace": "bench", "type": "memory",
                           "storage": {"backend": "pvc", "size": "1Gi",
                                       "accessMode": "ReadWriteOnce"}}).encode()
        status, payload = conns[client].request("POST", "/v1/contexts", body, ADMIN)
        assert status == 201, payload

    with light_clients(base) as (conns, connect):
        return run_concurrently(CLIENTS, ops // CLIENTS, work, connect)


def timed_reads(base: str, ops: int, method: str, path: str, body: bytes,
                headers: str) -> list[float]:
    latencies: list[float] = []

    def work(client: int, i: int) -> None:
        started = time.perf_counter()
        status, payload = conns[client].request(method, path, body, headers)
        latencies.append(time.perf_counter() - started)
        assert status == 200, payload

    with light_clients(base) as (conns, connect):
        run_concurrently(CLIENTS, ops // CLIENTS, work, connect)
    return latencies


def seed_set(base: str) -> str | None:
    """A workspace with an owner, a context set and an unbound credential; the token, or None
    when this build has no context-set routes yet."""
    with httpx.Client(base_url=base, headers={"X-Context-Subject": "user:alice"}) as http:
        http.put("/v1/namespaces/agents/members",
                 headers={"X-Context-Subject": "service:context-service-admin"},
                 json={"subject": {"kind": "user", "name": "alice"}, "role": "owner"})
        made = http.post("/v1/namespaces/agents/context-sets", json={
            "id": "finance", "name": "Finance", "description": "Company finance facts",
            "collections": ["company-facts", "board-minutes"],
            "verifiedAnswers": [{"id": "current-cfo", "question": "Who is our CFO?",
                                 "answer": "Priya Raman has been CFO since 1 July 2024.",
                                 "citations": ["company-facts/cfo-2024"]}],
            "definitions": [{"term": "ARR", "definition": "Annual recurring revenue",
                             "aliases": ["annual recurring revenue"]}],
            "instructions": [{"id": "cite", "text": "Cite every figure."}]})
        if made.status_code == 404:
            return None
        assert made.status_code == 201, made.text
        token = http.post("/api/w/agents/agent-credentials", json={
            "name": "bench", "scopes": ["context:read"], "expiresInDays": 30})
        assert token.status_code == 201, token.text
        return str(token.json()["token"])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=3200)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with postgres() as (url, data), served(url, data, env={"CS_AGENT_RATE_PER_SECOND": "0"}) \
            as server:
        credential_creates(server.url, 640, "warm")
        context_creates(server.url, 640, "warm")
        creds, ctxs = [], []
        for r in range(args.rounds):
            creds.append(credential_creates(server.url, args.ops, f"r{r}"))
            ctxs.append(context_creates(server.url, args.ops, f"r{r}"))
        c, x = statistics.median(creds), statistics.median(ctxs)
        print(f"credential creates {c:.0f}/s vs context creates {x:.0f}/s "
              f"(16 clients, median of {args.rounds}): {c / x:.2f}x")
        token = seed_set(server.url)
        if token is None:
            print("context-set routes not available: agent read latency skipped")
            return
        agent = ("POST", "/api/agent/v1/context-sets/get",
                 json.dumps({"contextSetId": "finance"}).encode(),
                 f"Authorization: Bearer {token}\r\n")
        admin = ("GET", "/v1/namespaces/agents/context-sets/finance", b"",
                 "X-Context-Subject: user:alice\r\n")
        timed_reads(server.url, 800, *agent)
        timed_reads(server.url, 800, *admin)
        a_runs, v_runs = [], []
        for _ in range(args.rounds):
            a_runs.append(timed_reads(server.url, args.ops, *agent))
            v_runs.append(timed_reads(server.url, args.ops, *admin))
        a = [x for run in a_runs for x in run]
        v = [x for run in v_runs for x in run]
        for label, values in (("agent context-sets/get", a), ("/v1 context set GET", v)):
            print(f"{label:>24}: p50 {percentile(values, 50) * 1e3:.2f} ms, "
                  f"p99 {percentile(values, 99) * 1e3:.2f} ms")
        ratio = statistics.median(statistics.median(r) for r in a_runs) / \
            statistics.median(statistics.median(r) for r in v_runs)
        print(f"agent pipeline cost: {ratio:.2f}x the /v1 read at p50 (goal <= 1.25x)")


if __name__ == "__main__":
    main()
