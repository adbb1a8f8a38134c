"""The relay over the real event log (PostgreSQL) to a real nats-server: every stored event
arrives once per position, in order, on its subject; a killed relay resumes without loss."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from context_service.adapters.eventstore.outbox import LogFeed, TrackedPosition
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import StreamSpec
from context_service.bootstrap import Container
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord
from context_service.domain.events import ADMIN
from tests.projections.history import write_history
from tests.support.nats_fixtures import NatsServerHandle, positions_of, read_stream, wait_until

pytestmark = [pytest.mark.nats, pytest.mark.postgres]
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


def test_an_event_near_the_body_limit_is_published(idle_container: Container,
                                                   nats_server: NatsServerHandle,
                                                   nats_stream: StreamSpec) -> None:
    app = idle_container.contexts
    app.execute("ns", "big", c.CreateContext(actor=ADMIN, name="big", namespace="ns",
                                             type="memory", backend="pvc", size="1Gi",
                                             access_mode="ReadWriteOnce"))
    rev = "ab" * 32
    app.execute("ns", "big", c.PublishRevision(actor=ADMIN, id=rev, operation="sync",
                                               created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    records = tuple(QueryRecord(id=f"r{i}", context="big", type="memory", revision=rev,
                                text="word " * 300) for i in range(700))
    app.execute("ns", "big", c.PublishQueryIndex(actor=ADMIN, revision=rev, records=records))
    head = idle_container.store.head()
    relay = _relay(idle_container, nats_server.url, nats_stream)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position >= head, what="large event published")
    finally:
        relay.stop()
    messages = read_stream(nats_server.url, nats_stream)
    assert len(messages[-1].payload) > 1024 * 1024
    assert messages[-1].json["name"] == "QueryIndexPublished"
