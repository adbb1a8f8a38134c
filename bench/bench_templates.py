"""Query-template benchmarks, each against a baseline in the same run:

- run overhead: a template returning 100 rows run in the sandbox (scope row, a pooled session
  of the restricted login, read-only transaction, bound parameters, rollback) until its answer
  vs the same SQL run directly on the service's connection, p50/p95; the session's return step
  (scope row deletion, reset) runs after the answer and is waited for outside the timings; the
  pool hands out the session put back last, as in service;
- timeout: the time from ``timeoutMs`` to the ``timeout`` outcome for a statement counting far
  past its timeout (``pg_sleep`` is revoked from the restricted login).

    python -m bench.bench_templates [--runs 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable

from bench.harness import percentile, postgres
from context_service import bootstrap
from context_service.config import Settings
from context_service.domain.query_template.events import Parameter

SQL = ("SELECT record_id, ordinal, text FROM {}passages WHERE collection_id = {}"
       " ORDER BY ordinal LIMIT 100")


def seed(container: bootstrap.Container) -> None:
    with container.datastore.transaction(commit=True) as cur:
        cur.execute("INSERT INTO agent_data.collections VALUES (%s, 'bench', 'facts',"
                    " 'knowledge', 'r1', 1, true, 0, 200)", (uuid.uuid4(),))
        cur.execute("INSERT INTO agent_data.passages SELECT 1, g, 'facts', 'd' || g, 'r' || g,"
                    " NULL, repeat('text ', 20), '{}', NULL, NULL, '{}', NULL, 20"
                    " FROM generate_series(0, 199) g")


def timed(fns: tuple[Callable[[], None], ...], runs: int,
          between: Callable[[], None] = lambda: None) -> list[list[float]]:
    """Milliseconds of each function, called in turn ``runs`` times: interleaved, so a busy
    machine slows both sides alike; ``between`` runs untimed after each call."""
    out: list[list[float]] = [[] for _ in fns]
    for _ in range(runs):
        for fn, times in zip(fns, out, strict=True):
            started = time.perf_counter()
            fn()
            times.append((time.perf_counter() - started) * 1000)
            between()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with postgres() as (url, data):
        container = bootstrap.build(Settings(data_dir=data, kube_mode="off", workers=()),
                                    url=url, pool_size=2)
        try:
            assert container.sandbox.problem is None, container.sandbox.problem
            seed(container)
            params = (Parameter(name="c", type="text"),)
            sandbox = container.sandbox

            def template() -> None:
                result = sandbox.run(SQL.format("", "$1"), params, ["facts"], "bench",
                                     ["facts"], 5000, 100)
                assert result.outcome == "ok" and len(result.rows) == 100, result

            def settled() -> None:
                # the session's return step (scope row deletion, reset) runs after the answer,
                # in the pool's worker: wait for it, untimed, so it never overlaps a timing
                assert sandbox.settle()

            def direct() -> None:
                with container.datastore.transaction(commit=False) as cur:
                    cur.execute(SQL.format("agent_data.", "%s"), ("facts",))
                    assert len(cur.fetchall()) == 100

            sandbox.ready()  # every pooled session open: none opens during the timings
            template(), direct()  # warm
            run_ms, direct_ms = timed((template, direct), args.runs, settled)
            p50_run, p50_direct = statistics.median(run_ms), statistics.median(direct_ms)
            print(f"template run (100 rows): p50 {p50_run:.2f} ms, p95 "
                  f"{percentile(run_ms, 95):.2f} ms")
            print(f"direct on the service connection: p50 {p50_direct:.2f} ms, p95 "
                  f"{percentile(direct_ms, 95):.2f} ms")
            print(f"overhead ratio at p50: {p50_run / p50_direct:.1f}x (goal <= 2x)")
            late = []
            for _ in range(5):
                started = time.perf_counter()
                result = sandbox.run("SELECT count(*) FROM generate_series(1, 10000000000) g",
                                     (), [], "bench", [], 500, 1)
                assert result.outcome == "timeout", result
                late.append((time.perf_counter() - started) * 1000 - 500)
            print(f"statement_timeout (500 ms) to timeout answer: median "
                  f"{statistics.median(late):.1f} ms, max {max(late):.1f} ms")
        finally:
            container.close()


if __name__ == "__main__":
    main()
