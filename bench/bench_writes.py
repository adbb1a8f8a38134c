"""Write throughput through HTTP (create, grant, revision) at 1 and 16 clients, against raw
psycopg single-row insert-and-commit at the same concurrency on the same database.

    python -m bench.bench_writes [--ops 600]
"""

from __future__ import annotations

import argparse
import http.client
import json
import threading

import psycopg

from bench.harness import postgres, run_concurrently, served

DIGEST = "ab" * 32


def raw_baseline(url: str, clients: int, ops: int) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, "
                     "k text, v bytea)")
    local = threading.local()

    def work(client: int, i: int) -> None:
        if not hasattr(local, "conn"):
            local.conn = psycopg.connect(url)
        local.conn.execute("INSERT INTO bench_raw (k, v) VALUES (%s, %s)",
                           (f"{client}-{i}", b"x" * 200))
        local.conn.commit()

    return run_concurrently(clients, ops // clients, work)


def api_writes(base: str, clients: int, ops: int, tag: str) -> float:
    """Writes over keep-alive connections with the standard library's light HTTP client, so
    the measurement is of the service rather than of the client."""
    local = threading.local()
    host, port = base.removeprefix("http://").split(":")

    def send(method: str, path: str, body: dict[str, object]) -> None:
        if not hasattr(local, "conn"):
            local.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn: http.client.HTTPConnection = local.conn
        conn.request(method, path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        payload = response.read()
        assert response.status in (200, 201), payload

    def work(client: int, i: int) -> None:
        name = f"{tag}-{client}-{i // 3}"
        step = i % 3
        if step == 0:
            send("POST", "/v1/contexts", {
                "name": name, "namespace": "bench", "type": "memory",
                "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}})
        elif step == 1:
            send("PUT", f"/v1/namespaces/bench/contexts/{name}/grants",
                 {"subject": {"kind": "agent", "name": "a"}, "permissions": ["read"]})
        else:
            send("POST", f"/v1/namespaces/bench/contexts/{name}/revisions",
                 {"id": DIGEST, "createdAt": "2026-01-01T00:00:00Z", "operation": "sync",
                  "files": 1, "bytes": 1})

    return run_concurrently(clients, ops // clients, work)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=960)
    parser.add_argument("--workers", default="projections",
                        help="CS_WORKERS of the served process")
    args = parser.parse_args()
    with postgres() as (url, data), served(url, data, workers=args.workers) as server:
        print(f"{'clients':>8} {'api ops/s':>10} {'raw ops/s':>10} {'ratio':>6}")
        for clients in (1, 16):
            ops = args.ops - args.ops % (3 * clients)
            api = api_writes(server.url, clients, ops, f"c{clients}")
            raw = raw_baseline(url, clients, ops)
            print(f"{clients:>8} {api:>10.0f} {raw:>10.0f} {api / raw:>6.2f}")


if __name__ == "__main__":
    main()
