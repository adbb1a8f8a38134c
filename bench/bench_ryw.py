"""Read-your-writes lag: from a write's commit (its response) until the list view shows it,
under a steady write rate. Also reports the latency of a list read issued right after a write
(which waits for the view).

    python -m bench.bench_ryw [--rate 200] [--seconds 10]
"""

from __future__ import annotations

import argparse
import threading
import time

import httpx
import psycopg

from bench.harness import paced_creates, percentile, postgres, served


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    lags: list[float] = []
    reads: list[float] = []
    with postgres() as (url, data), served(url, data) as server:
        pending: list[tuple[int, float]] = []
        lock = threading.Lock()
        done = threading.Event()

        def watcher() -> None:
            with psycopg.connect(url, autocommit=True) as conn:
                while not done.is_set() or pending:
                    row = conn.execute("SELECT notification_id FROM projection_tracking "
                                       "WHERE application_name = 'context_catalog'").fetchone()
                    seen = row[0] if row else 0
                    now = time.perf_counter()
                    with lock:
                        for item in [p for p in pending if p[0] <= seen]:
                            lags.append(now - item[1])
                            pending.remove(item)
                    time.sleep(0.0005)

        watch = threading.Thread(target=watcher)
        watch.start()
        def on_write(i: int, _sent: float, r: httpx.Response, http: httpx.Client) -> None:
            acked = time.perf_counter()
            with lock:
                pending.append((int(r.headers["x-context-position"]), acked))
            if i % 20 == 0:
                t = time.perf_counter()
                got = http.get(f"/v1/namespaces/lag/contexts/c{i}")
                assert got.status_code == 200
                with lock:
                    reads.append(time.perf_counter() - t)

        achieved = paced_creates(server.url, args.rate, args.seconds, "lag", on_write)
        total = len(pending) + len(lags)
        done.set()
        watch.join()
    ms = [x * 1000 for x in lags]
    rd = [x * 1000 for x in reads]
    print(f"writes: {total} at {achieved:.0f}/s (target {args.rate:.0f}/s)")
    print(f"commit -> visible in list view: p50 {percentile(ms, 50):.1f} ms, "
          f"p99 {percentile(ms, 99):.1f} ms, max {max(ms):.1f} ms")
    print(f"GET right after its write (waits for the view): p50 {percentile(rd, 50):.1f} ms,"
          f" p99 {percentile(rd, 99):.1f} ms")


if __name__ == "__main__":
    main()
