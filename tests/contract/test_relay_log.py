"""The relay over the real event log (PostgreSQL) to a real nats-server: every stored event
arrives once per position, in order, on its subject; a killed relay resumes without loss."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.adapters.eventstore.outbox import LogFeed, TrackedPosition
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.server import probe
from context_service.adapters.nats.stream import StreamSpec
from context_service.bootstrap import Container
from tests.projections.history import write_history
from tests.support.nats_fixtures import NatsServerHandle, positions_of, read_stream, wait_until

pytestmark = [pytest.mark.nats, pytest.mark.postgres]
ALICE = {"X-Context-Subject": "user:alice"}
SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "event-envelope.schema.json")
                    .read_text())


def _relay(container: Container, url: str, spec: StreamSpec) -> Relay:
    return Relay(LogFeed(container.store), TrackedPosition(container.tracking, "relay"),
                 RelaySettings(url=url, stream=spec))


def test_every_stored_event_arrives_once_in_order(idle_container: Container,
                                                  nats_server: NatsServerHandle,
                                                  nats_stream: StreamSpec) -> None:
    write_history(idle_container.contexts, seed=21, steps=120)
    head = idle_container.store.head()
    relay = _relay(idle_container, nats_server.url, nats_stream)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position >= head, what="relay catch-up")
        write_history(idle_container.contexts, seed=22, steps=40)  # live events too
        head = idle_container.store.head()
        wait_until(lambda: relay.stats.last_position >= head, what="live events")
    finally:
        relay.stop()
    messages = read_stream(nats_server.url, nats_stream)
    logged = idle_container.store.read(0, 100_000)
    assert positions_of(messages) == [r.position for r in logged]
    for message, recorded in zip(messages, logged, strict=True):
        body = message.json
        jsonschema.validate(body, SCHEMA)
        assert body["name"] == recorded.name
        assert message.subject == (f"{nats_stream.subject_prefix}.{recorded.stream.namespace}"
                                   f".context.{recorded.name}")
    assert TrackedPosition(idle_container.tracking, "relay").load() == head


def test_killed_relay_resumes_without_gaps(idle_container: Container,
                                           nats_server: NatsServerHandle,
                                           nats_stream: StreamSpec) -> None:
    write_history(idle_container.contexts, seed=31, steps=150)
    head = idle_container.store.head()
    first = _relay(idle_container, nats_server.url, nats_stream)
    first.start()
    wait_until(lambda: first.stats.last_position >= head // 2, what="half published")
    first.kill()
    second = _relay(idle_container, nats_server.url, nats_stream)
    second.start()
    try:
        wait_until(lambda: second.stats.last_position >= head, what="resumed")
    finally:
        second.stop()
    positions = positions_of(read_stream(nats_server.url, nats_stream))
    assert positions == [r.position for r in idle_container.store.read(0, 100_000)]


def test_a_one_mib_index_body_reaches_a_server_with_the_default_payload_limit(
        idle_container: Container, nats_server: NatsServerHandle,
        nats_stream: StreamSpec) -> None:
    info = probe("127.0.0.1", int(nats_server.url.rsplit(":", 1)[1]))
    assert info is not None and info["max_payload"] == 1024 * 1024  # the server's default
    rev = "ab" * 32
    # records until the body is within 400 bytes of the server's payload limit: the size is
    # counted record by record (each adds its own JSON and a ", " separator), not by serialising
    # the growing list again, and checked against the serialised body below
    records: list[dict[str, Any]] = []
    size = len(json.dumps({"revision": rev, "records": []}).encode())
    for i in range(3000):
        record: dict[str, Any] = {"id": f"r{i}", "context": "big", "type": "memory",
                                  "revision": rev, "text": f"record {i} " + "word " * 60,
                                  "title": f"Title {i}", "keywords": ["k"],
                                  "factKey": f"fact/{i % 7}",
                                  "fields": [{"name": "n", "type": "number", "value": i}]}
        grown = size + len(json.dumps(record).encode()) + (2 if records else 0)
        if grown > 1024 * 1024 - 400:
            break
        records.append(record)
        size = grown
    body = json.dumps({"revision": rev, "records": records}).encode()
    assert len(body) == size
    assert 1024 * 1024 - 1000 < len(body) <= 1024 * 1024
    with TestClient(app=bootstrap.app(idle_container)) as client:
        assert client.post("/v1/contexts", json={
            "name": "big", "namespace": "ns", "type": "memory",
            "storage": {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}},
            headers=ALICE).status_code == 201
        assert client.post("/v1/namespaces/ns/contexts/big/revisions", json={
            "id": rev, "createdAt": "2026-01-01T00:00:00Z", "operation": "sync"},
            headers=ALICE).status_code in (200, 201)
        answer = client.put("/v1/namespaces/ns/contexts/big/query-index", content=body,
                            headers=ALICE)
        assert answer.status_code == 204, answer.text
    head = idle_container.store.head()
    relay = _relay(idle_container, nats_server.url, nats_stream)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position >= head, what="large index published")
    finally:
        relay.stop()
    assert relay.stats.errors == 0
    messages = read_stream(nats_server.url, nats_stream)
    assert positions_of(messages) == [r.position for r in idle_container.store.read(0, 100_000)]
    index = [m.json for m in messages if m.json["aggregateId"].endswith("big")
             and m.json["name"].startswith("QueryIndex")]
    assert [m["name"] for m in index] == ["QueryIndexPartStaged"] * (len(index) - 1) + [
        "QueryIndexPublished"]
    assert len(index) >= 3
    assert max(len(m.payload) for m in messages) < 1024 * 1024
    sent = [(r["id"], r["text"], r["factKey"]) for r in records]
    relayed = [(r["id"], r["text"], r["fact_key"]) for m in index[:-1]
               for r in m["data"]["records"]]
    assert relayed == sent
    assert index[-1]["data"]["records"] == [] and index[-1]["data"]["parts"] == len(index) - 1
