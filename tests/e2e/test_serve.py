"""``context-service serve`` as a process: drive it over HTTP, restart it, find the same state;
kill it mid-burst and find every acknowledged write."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from context_service import bootstrap
from context_service.adapters.postgres import embedded
from context_service.config import Settings
from tests.e2e.server import ServerProcess, context

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]


@pytest.fixture
def server(data_dir: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(data_dir)
    yield proc
    proc.cleanup()


def test_restart_finds_the_same_state(server: ServerProcess, database_url: str) -> None:
    # the state lives in the suite's PostgreSQL: a restart of the service, not of its database
    # (the embedded server's restart after a crash is the next test's)
    server.env["CS_DATABASE_URL"] = database_url
    server.start()
    with server.client() as http:
        assert http.post("/v1/contexts", json=context("notes")).status_code == 201
        grant = {"subject": {"kind": "agent", "name": "bot"}, "permissions": ["read"]}
        assert http.put("/v1/namespaces/e2e/contexts/notes/grants", json=grant).status_code == 200
        before = {p: http.get(p).text for p in (
            "/v1/namespaces/e2e/contexts", "/v1/namespaces/e2e/contexts/notes/audit",
            "/v1/namespaces/e2e/contexts/notes/grants")}
    assert server.stop() == 0
    server.start()
    with server.client() as http:
        after = {p: http.get(p).text for p in before}
        assert http.post("/v1/contexts", json=context("notes")).status_code == 409
    assert after == before


def test_missing_sandbox_image_stops_at_startup(data_dir: Path) -> None:
    proc = ServerProcess(data_dir, env={"CS_SANDBOX_IMAGE": ""})
    with pytest.raises(RuntimeError, match="CS_SANDBOX_IMAGE is required"):
        proc.start(timeout=20)


def test_sigkill_mid_burst_loses_no_acknowledged_write(server: ServerProcess) -> None:
    server.start()
    acknowledged: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def writer(worker: int) -> None:
        with server.client() as http:
            for i in range(10_000):
                if stop.is_set():
                    return
                name = f"c{worker}-{i}"
                try:
                    response = http.post("/v1/contexts", json=context(name))
                except httpx.HTTPError:
                    return
                if response.status_code == 201:
                    with lock:
                        acknowledged.append(name)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    while len(acknowledged) < 60:
        threading.Event().wait(0.01)
    server.kill()
    stop.set()
    for t in threads:
        t.join()

    server.start()
    with server.client() as http:
        listed = {c["name"] for c in http.get("/v1/namespaces/e2e/contexts").json()["items"]}
    assert set(acknowledged) <= listed
    server.stop()

    # The views the restarted service serves equal a rebuild from position zero.
    url = embedded.start(server.data_dir)
    container = bootstrap.build(Settings(data_dir=server.data_dir), url=url, pool_size=2)
    try:
        def rows() -> list[dict[str, Any]]:
            with container.datastore.transaction(commit=False) as cur:
                cur.execute("SELECT stream_id, live, doc::text FROM context_catalog ORDER BY 1")
                return cur.fetchall()

        for runner in container.runners.values():
            runner.catch_up()
        live = rows()
        for runner in container.runners.values():
            runner.rebuild()
        rebuilt = rows()
        differing = [(a, b) for a, b in zip(live, rebuilt, strict=False) if a != b]
        assert differing == []
        assert len(rebuilt) == len(live)
    finally:
        container.close()
