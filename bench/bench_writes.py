"""Write throughput through HTTP (create, grant, revision) at 1 and 16 clients, against raw
psycopg single-row insert-and-commit at the same concurrency on the same database.

Rounds alternate (API, raw, API, raw, ...) and the medians are compared, so a slow moment of
the machine does not land on one side only. A bare Litestar route at 16 clients is measured
too: what HTTP alone costs on this machine.

    python -m bench.bench_writes [--ops 3840] [--rounds 3] [--workers projections]
                                 [--worker-process]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg

from bench.harness import light_clients, postgres, run_concurrently, served
from bench.light_http import LightClient
from tests.e2e.server import free_port

DIGEST = "ab" * 32


def raw_baseline(url: str, clients: int, ops: int) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, "
                     "k text, v bytea)")
    conns: dict[int, psycopg.Connection[tuple[object, ...]]] = {}

    def connect(client: int) -> None:
        conns[client] = psycopg.connect(url)

    def work(client: int, i: int) -> None:
        conn = conns[client]
        conn.execute("INSERT INTO bench_raw (k, v) VALUES (%s, %s)", (f"{client}-{i}", b"x" * 200))
        conn.commit()

    try:
        return run_concurrently(clients, ops // clients, work, connect)
    finally:
        for conn in conns.values():
            conn.close()


def api_writes(base: str, clients: int, ops: int, tag: str) -> float:
    """Create, grant, publish a revision, over and over, each client on its own keep-alive
    connection; every answer must be a success."""
    def send(client: int, method: str, path: str, body: dict[str, object]) -> None:
        status, payload = conns[client].request(method, path, json.dumps(body).encode())
        assert status in (200, 201), payload

    def work(client: int, i: int) -> None:
        name = f"{tag}-{client}-{i // 3}"
        step = i % 3
        if step == 0:
            send(client, "POST", "/v1/contexts", {
                "name": name, "namespace": "bench", "type": "memory",
                "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}})
        elif step == 1:
            send(client, "PUT", f"/v1/namespaces/bench/contexts/{name}/grants",
                 {"subject": {"kind": "agent", "name": "a"}, "permissions": ["read"]})
        else:
            send(client, "POST", f"/v1/namespaces/bench/contexts/{name}/revisions",
                 {"id": DIGEST, "createdAt": "2026-01-01T00:00:00Z", "operation": "sync",
                  "files": 1, "bytes": 1})

    with light_clients(base) as (conns, connect):
        return run_concurrently(clients, ops // clients, work, connect)


def bare_route(base: str, clients: int, ops: int) -> float:
    body = json.dumps({"name": "x", "namespace": "bench", "type": "memory"}).encode()

    def work(client: int, i: int) -> None:
        status, _ = conns[client].request("POST", "/v1/contexts", body)
        assert status == 201

    with light_clients(base) as (conns, connect):
        return run_concurrently(clients, ops // clients, work, connect)


@contextlib.contextmanager
def bare_app() -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bench.bare_app", str(port)])
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                LightClient("127.0.0.1", port).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def worker_process(url: str, data: Path, enabled: bool) -> Iterator[None]:
    """The projections as their own process (``context-service worker projections``)."""
    if not enabled:
        yield
        return
    env = {**os.environ, "CS_DATABASE_URL": url, "CS_DATA_DIR": str(data / "worker"),
           "CS_KUBE": "off", "CS_LOG_FORMAT": "json"}
    proc = subprocess.Popen([sys.executable, "-m", "context_service.cli", "worker", "projections"],
                            env=env)
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=3840, help="writes per round at 16 clients")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", default="projections",
                        help="CS_WORKERS of the served process")
    parser.add_argument("--worker-process", action="store_true",
                        help="run the projections as their own worker process instead")
    args = parser.parse_args()
    workers = "" if args.worker_process else args.workers
    with postgres() as (url, data), served(url, data, workers=workers) as server, \
            worker_process(url, data, args.worker_process):
        api_writes(server.url, 16, 480, "warm")
        print(f"{'clients':>8} {'api ops/s':>10} {'raw ops/s':>10} {'ratio':>6}")
        for clients in (1, 16):
            ops = (args.ops if clients > 1 else args.ops // 4) // (3 * clients) * 3 * clients
            api, raw = [], []
            for r in range(args.rounds):
                api.append(api_writes(server.url, clients, ops, f"c{clients}r{r}"))
                raw.append(raw_baseline(url, clients, ops))
            a, b = statistics.median(api), statistics.median(raw)
            print(f"{clients:>8} {a:>10.0f} {b:>10.0f} {a / b:>6.2f}")
    with bare_app() as base:
        bare_route(base, 16, 960)
        bare = statistics.median(bare_route(base, 16, args.ops) for _ in range(args.rounds))
    print(f"bare Litestar route, 16 clients: {bare:.0f} requests/s; "
          f"the API's writes are {a / bare:.2f}x of it")


if __name__ == "__main__":
    main()
