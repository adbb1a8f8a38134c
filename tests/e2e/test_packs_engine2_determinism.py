"""pack-engine/2 is deterministic where it runs: against real ``context-service serve``
processes over one database, the same 50 packs (hybrid and lexical, conversations with sessions
so every hybrid rule takes part) answer byte for byte the same bodies in a first process, in a
second one (its own hash seed, its caches and features computed again), and after every
projection is rebuilt from position zero. 50 packs keep the test within a shared 2-core machine;
the engine's own test holds 200 across two processes (tests/unit/test_engine2_adapter.py)."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from context_service import bootstrap
from context_service.config import Settings
from tests.e2e.server import ServerProcess

ADMIN = {"X-Context-Subject": "service:context-service-admin"}
ALICE = {"X-Context-Subject": "user:alice"}
WS = "determinism"
REV = "2" * 64
PACKS = 50
WORDS = ("budget", "trip", "lisbon", "painting", "concert", "dog", "adopted", "moved", "office",
         "sister", "birthday", "marathon", "guitar", "lessons", "garden", "promotion", "book",
         "club", "camping", "recipe", "museum", "when", "did", "the", "we", "went", "to")


@pytest.fixture
def server(data_dir: Path, database_url: str) -> Iterator[ServerProcess]:
    proc = served(data_dir, database_url)
    try:
        yield proc
    finally:
        proc.cleanup()


def served(data_dir: Path, database_url: str) -> ServerProcess:
    proc = ServerProcess(data_dir, env={"CS_WORKERS": "projections,query-index",
                                        "CS_AGENT_RATE_PER_SECOND": "0"})
    proc.env["CS_DATABASE_URL"] = database_url  # the suite's PostgreSQL, a database of its own
    return proc


def conversation(rng: random.Random, name: str) -> list[dict[str, Any]]:
    """Turns of a few sessions (``file``), so neighbour turns and the document prior count."""
    return [{"id": f"s{s}-{t}", "context": name, "type": "memory", "revision": REV,
             "file": f"session_{s}",
             "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 18))),
             "source": {"context": "", "type": "", "revision": ""}}
            for s in range(6) for t in range(rng.randint(8, 20))]


def publish(client: httpx.Client, name: str, records: list[dict[str, Any]]) -> None:
    resp = client.post("/v1/contexts", headers=ALICE, json={
        "name": name, "namespace": WS, "type": "memory",
        "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteMany"}})
    assert resp.status_code == 201, resp.text
    base = f"/v1/namespaces/{WS}/contexts/{name}"
    resp = client.post(f"{base}/revisions", headers=ALICE, json={
        "id": REV, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync"})
    assert resp.status_code == 201, resp.text
    resp = client.put(f"{base}/query-index", headers=ALICE,
                      json={"revision": REV, "records": records})
    assert resp.status_code == 204, resp.text


def seed(client: httpx.Client) -> dict[str, str]:
    """Three conversations and a credential of alice's; its bearer header."""
    resp = client.put(f"/v1/namespaces/{WS}/members", headers=ADMIN,
                      json={"subject": {"kind": "user", "name": "alice"}, "role": "owner"})
    assert resp.status_code == 200, resp.text
    rng = random.Random(25)
    for name in ("talks-a", "talks-b", "talks-c"):
        publish(client, name, conversation(rng, name))
    resp = client.post(f"/api/w/{WS}/agent-credentials", headers=ALICE, json={
        "name": "determinism", "scopes": ["context:read"], "expiresInDays": 1})
    assert resp.status_code == 201, resp.text
    return {"Authorization": f"Bearer {resp.json()['token']}"}


def requests() -> list[dict[str, Any]]:
    rng = random.Random(26)
    return [{"task": " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 7))),
             "budget": {"maxTokens": rng.choice((256, 600, 2000))},
             "retrieval": "hybrid" if k % 5 else "lexical",
             "asOf": {"validTime": "2026-06-01T00:00:00Z"}} for k in range(PACKS)]


def bodies(client: httpx.Client, bearer: dict[str, str]) -> list[bytes]:
    """Each request's body; 503 while a new index's features are being computed."""
    out = []
    for body in requests():
        deadline = time.monotonic() + 180
        while True:
            resp = client.post("/api/agent/v1/context-packs", headers=bearer, json=body)
            if resp.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert resp.status_code == 200, resp.text
        out.append(resp.content)
    return out


def rebuild(data_dir: Path, database_url: str) -> None:
    """Every projection rebuilt from position zero (the service stopped)."""
    container = bootstrap.build(Settings(data_dir=data_dir, kube_mode="off"), url=database_url,
                                pool_size=2)
    try:
        for runner in container.runners.values():
            runner.rebuild()
    finally:
        container.close()


@pytest.mark.timeout(900)
def test_the_same_packs_across_processes_and_a_rebuild(server: ServerProcess, data_dir: Path,
                                                       database_url: str) -> None:
    server.start()
    with server.client() as client:
        bearer = seed(client)
        first = bodies(client, bearer)
    server.stop()
    assert len(first) == PACKS and len(set(first)) > PACKS // 2  # the packs differ

    second_process = served(data_dir, database_url)
    second_process.start()
    try:
        with second_process.client() as client:
            second = bodies(client, bearer)
    finally:
        second_process.stop()
    assert [i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b] == []

    rebuild(data_dir, database_url)
    after = served(data_dir, database_url)
    after.start()
    try:
        with after.client() as client:
            rebuilt = bodies(client, bearer)
    finally:
        after.stop()
        after.cleanup()
    assert [i for i, (a, b) in enumerate(zip(first, rebuilt, strict=True)) if a != b] == []
