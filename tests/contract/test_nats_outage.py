"""nats-server away for a while (stopped, or killed) while events keep arriving or a backlog is
in flight: the relay waits, reconnects and publishes everything exactly once, in order."""

from __future__ import annotations

import threading
import time

import pytest

from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import (
    NatsServerHandle,
    fresh_stream_spec,
    make_events,
    positions_of,
    read_stream,
    wait_until,
)

pytestmark = pytest.mark.nats

TOTAL = 2000


def _produce_live(feed: MemoryFeed) -> threading.Thread:
    def produce() -> None:  # TOTAL events over about 2 s, straddling the outage
        for first in range(1, TOTAL + 1, 40):
            feed.extend(make_events(40, start=first))
            time.sleep(0.04)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("graceful", "backlog"),
    [(True, False), (False, True)],
    ids=["stopped-while-live", "killed-with-messages-in-flight"],
)
def test_outage_loses_nothing(
    private_nats_server: NatsServerHandle, graceful: bool, backlog: bool
) -> None:
    spec = fresh_stream_spec()
    feed = MemoryFeed(make_events(TOTAL) if backlog else ())
    store = MemoryPositionStore()
    settings = RelaySettings(
        url=private_nats_server.url,
        stream=spec,
        backoff_initial=0.05,
        backoff_max=0.5,
        batch_size=20 if backlog else 512,  # a slow backlog: the kill lands with acks pending
        max_in_flight=16 if backlog else 1024,
    )
    relay = Relay(feed, store, settings)
    relay.start()
    producer = None if backlog else _produce_live(feed)
    try:
        wait_until(lambda: relay.stats.last_position >= 400, what="publishing under way")
        private_nats_server.stop(graceful=graceful)
        wait_until(lambda: not relay.stats.connected, what="the relay to notice")
        noticed = relay.stats.errors
        # the relay keeps retrying while events wait: three more failed attempts, not a fixed time
        wait_until(lambda: relay.stats.errors >= noticed + 3, what="retries while NATS is away")
        during = relay.stats
        assert during.errors > 0 and during.last_position < TOTAL
        private_nats_server.start()
        if producer is not None:
            producer.join()
        wait_until(lambda: relay.stats.last_position == TOTAL, what="everything after restart")
    finally:
        relay.stop()
    assert positions_of(read_stream(private_nats_server.url, spec)) == list(range(1, TOTAL + 1))
    assert store.load() == TOTAL
