"""The relay against a real nats-server: every position once, in log order, on the right subject."""

from __future__ import annotations

import pytest

from src.adapters.nats.envelope import decode, subject_of
from src.adapters.nats.relay import Relay, RelaySettings
from src.adapters.nats.stream import StreamSpec
from src.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import (
    NatsServerHandle,
    make_events,
    positions_of,
    read_stream,
    wait_until,
)

pytestmark = pytest.mark.nats


def test_publishes_every_position_once_in_order(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    events = make_events(1500)
    feed, store = MemoryFeed(events), MemoryPositionStore()
    relay = Relay(feed, store, RelaySettings(url=nats_server.url, stream=nats_stream))
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 1500, what="catch-up")
        feed.extend(make_events(500, start=1501))
        wait_until(lambda: relay.stats.last_position == 2000, what="live events")
    finally:
        relay.stop()
    messages = read_stream(nats_server.url, nats_stream)
    assert positions_of(messages) == list(range(1, 2001))
    for message, expected in zip(messages, events, strict=False):
        assert decode(message.payload) == expected
        assert message.subject == subject_of(expected, nats_stream.subject_prefix)
    stats = relay.stats
    assert (stats.published, stats.duplicates, stats.saved_position) == (2000, 0, 2000)
    assert store.load() == 2000
    assert store.saves < 200  # batched, not one write per event
