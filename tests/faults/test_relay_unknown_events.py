"""The relay and an event of a type this version does not know (written by a newer version
during a rolling upgrade, or a type since retired): it is published like any other, in its
place, with its stored fields, instead of stopping the relay at it for good."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from context_service.adapters.eventstore.outbox import LogFeed
from context_service.adapters.nats.envelope import decode, subject_for
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import StreamSpec
from context_service.adapters.nats.worker import RelayWorker
from context_service.bootstrap import Container
from context_service.config import Settings
from context_service.projections.outbox import MemoryPositionStore
from tests.support.nats_fixtures import NatsServerHandle, positions_of, read_stream, wait_until
from tests.support.newer_events import NEWER, create, record_newer

pytestmark = [pytest.mark.nats, pytest.mark.postgres]


def test_an_event_of_an_unknown_type_is_published_in_its_place(
        idle_container: Container, nats_server: NatsServerHandle, nats_stream: StreamSpec,
        caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.WARNING, logger="context_service.adapters.nats.relay")
    create(idle_container, "renamed-later")
    newer = record_newer(idle_container, "renamed-later", version=2)
    head = create(idle_container, "after")
    positions = MemoryPositionStore()
    settings = Settings(data_dir=tmp_path, nats_url=nats_server.url, kube_mode="off")
    worker = RelayWorker(settings, LogFeed(idle_container.store), positions)
    worker.relay = Relay(LogFeed(idle_container.store), positions,
                         RelaySettings(url=nats_server.url, stream=nats_stream,
                                       backoff_initial=0.01))
    worker.start()
    try:
        wait_until(lambda: worker.relay.stats.last_position == head, timeout=10,
                   what="the relay went past the unknown event")
    finally:
        worker.stop()
    assert worker.relay.stats.errors == 0
    messages = read_stream(nats_server.url, nats_stream)
    assert positions_of(messages) == [r.position for r in idle_container.store.read(0, 100)]
    [index] = [i for i, m in enumerate(messages) if int(m.headers["Nats-Msg-Id"]) == newer]
    message, before = messages[index], messages[index - 1]
    assert message.subject == subject_for("ns", "context", NEWER, nats_stream.subject_prefix)
    # the headers a known event gets, with the same values
    assert message.headers == {**before.headers, "Nats-Msg-Id": str(newer),
                               "Nats-Expected-Last-Msg-Id": before.headers["Nats-Msg-Id"]}
    envelope = decode(message.payload)
    assert (envelope.name, envelope.aggregate, envelope.aggregate_id, envelope.version) == (
        NEWER, "context", "ns/renamed-later", 2)
    assert (envelope.namespace, envelope.actor) == ("ns", "user:bob")
    assert envelope.timestamp.isoformat() == "2026-12-01T10:00:00.500000+00:00"
    assert envelope.data == {"new_name": "renamed", "reason": "tidy"}  # as stored
    assert positions.load() == head
    [unknown] = [v for name, _, _, v in worker.gauges() if name == "cs_relay_unknown_total"]
    assert unknown == 1
    assert any(NEWER in r.getMessage() and str(newer) in r.getMessage() for r in caplog.records)
