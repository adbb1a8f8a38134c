"""Shared benchmark plumbing: a PostgreSQL to measure on, a served process, timing helpers."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from bench.light_http import LightClient
from context_service.adapters.postgres import embedded
from tests.e2e.server import ServerProcess


@contextlib.contextmanager
def postgres() -> Iterator[tuple[str, Path]]:
    """The database to measure on: CS_DATABASE_URL, or a fresh embedded server, whose files
    are removed afterwards (a 100,000-record run leaves ~2.4 GB)."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        os.environ["XDG_RUNTIME_DIR"] = runtime = tempfile.mkdtemp(prefix="cs-bench-run-")
        atexit.register(shutil.rmtree, runtime, ignore_errors=True)
    data = Path(tempfile.mkdtemp(prefix="cs-bench-"))
    url = os.environ.get("CS_DATABASE_URL") or embedded.start(data, database="bench")
    try:
        yield url, data
    finally:
        if not os.environ.get("CS_DATABASE_URL"):
            embedded.stop(data)
        shutil.rmtree(data, ignore_errors=True)


@contextlib.contextmanager
def served(url: str, data: Path, workers: str = "projections",
           env: dict[str, str] | None = None) -> Iterator[ServerProcess]:
    (data / "srv").mkdir(exist_ok=True)
    server = ServerProcess(data / "srv", env={"CS_DATABASE_URL": url, "CS_WORKERS": workers,
                                              "CS_LOG_FORMAT": "json", **(env or {})})
    server.env["CS_DATABASE_URL"] = url
    server.start()
    try:
        yield server
    finally:
        server.stop()


def run_concurrently(clients: int, per_client: int, work: Callable[[int, int], None],
                     connect: Callable[[int], None] | None = None) -> float:
    """Run ``work(client, i)`` for every client and i; return operations per second. Each
    client's ``connect(client)`` runs before the clock starts."""
    barrier = threading.Barrier(clients + 1)
    errors: list[BaseException] = []

    def body(client: int) -> None:
        try:
            if connect is not None:
                connect(client)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()
            raise
        barrier.wait()
        try:
            for i in range(per_client):
                work(client, i)
        except BaseException as exc:  # a failed operation fails the measurement
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    with contextlib.suppress(threading.BrokenBarrierError):  # a client could not connect
        barrier.wait()
    started = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise RuntimeError(f"{len(errors)} client(s) failed") from errors[0]
    return clients * per_client / elapsed


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def paced_creates(base_url: str, rate: float, seconds: float, namespace: str,
                  on_write: Callable[[int, float, httpx.Response, httpx.Client], None],
                  writers: int = 4) -> float:
    """Create contexts at a steady ``rate`` from ``writers`` threads (open loop); call
    ``on_write(i, sent_at, response, client)`` for each; return the rate achieved."""
    interval = writers / rate
    total = int(rate * seconds) // writers * writers
    start = time.perf_counter()

    def writer(w: int) -> None:
        with httpx.Client(base_url=base_url, timeout=30) as http:
            for i in range(w, total, writers):
                delay = start + (i // writers) * interval - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                body = {"name": f"c{i}", "namespace": namespace, "type": "memory",
                        "storage": {"backend": "pvc", "size": "1Gi",
                                    "accessMode": "ReadWriteOnce"}}
                sent = time.perf_counter()
                on_write(i, sent, http.post("/v1/contexts", json=body), http)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return total / (time.perf_counter() - start)


@contextlib.contextmanager
def light_clients(base: str) -> Iterator[tuple[dict[int, LightClient], Callable[[int], None]]]:
    """A keep-alive connection per client, opened (by ``connect``) before the clock starts."""
    host, port = base.removeprefix("http://").split(":")
    conns: dict[int, LightClient] = {}

    def connect(client: int) -> None:
        conns[client] = LightClient(host, int(port))

    try:
        yield conns, connect
    finally:
        for conn in conns.values():
            conn.close()
