"""The relay against a real nats-server: every position once, in log order, on the right subject."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from context_service.adapters.nats.envelope import Envelope, decode, subject_of
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import StreamSpec
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore, OutboxEvent
from tests.support.nats_fixtures import (
    NatsServerHandle,
    free_port,
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


class FlakyFeed(MemoryFeed):
    """A feed whose first reads fail, like an event store that is briefly unreachable."""

    def __init__(self, failures: int, events: list[Envelope]) -> None:
        super().__init__(events)
        self.failures = failures

    def read(self, after: int, limit: int) -> Sequence[OutboxEvent]:
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("event store unavailable")
        return super().read(after, limit)


def test_async_api_and_a_failing_feed(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    feed = FlakyFeed(2, make_events(300))
    settings = RelaySettings(url=nats_server.url, stream=nats_stream, backoff_initial=0.01)
    relay = Relay(feed, MemoryPositionStore(), settings)

    async def main() -> None:
        running = asyncio.create_task(relay.run())
        while relay.stats.last_position < 300:
            assert not running.done()
            await asyncio.sleep(0.01)
        assert relay.stats.connected
        relay.request_stop()
        await asyncio.wait_for(running, 10)

    asyncio.run(main())
    stats = relay.stats
    assert stats.errors == 2 and stats.last_error == "ConnectionError: event store unavailable"
    assert (stats.published, stats.saved_position, stats.in_flight) == (300, 300, 0)
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(1, 301))


def test_stop_before_any_event_and_unreachable_nats(nats_stream: StreamSpec) -> None:
    settings = RelaySettings(url=f"nats://127.0.0.1:{free_port()}", stream=nats_stream)
    relay = Relay(MemoryFeed(make_events(3)), MemoryPositionStore(), settings)
    relay.start()
    wait_until(lambda: relay.stats.errors >= 2, what="connection attempts")
    started = time.monotonic()
    relay.stop()
    assert time.monotonic() - started < 2
    assert relay.stats.last_position == 0 and not relay.stats.connected


def test_a_list_of_servers_is_a_cluster_not_one_url(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    """``CS_NATS_URL`` may list a cluster's servers, comma-separated (as the NATS tools take
    them): one that does not answer is passed over for the next."""
    events = make_events(50)
    down = f"nats://127.0.0.1:{free_port()}"
    for url in (f"{down},{nats_server.url}", f"{nats_server.url}, {down}"):
        relay = Relay(MemoryFeed(events), MemoryPositionStore(),
                      RelaySettings(url=url, stream=nats_stream, backoff_initial=0.01))
        relay.start()
        try:
            wait_until(lambda r=relay: r.stats.last_position == 50, what="publishing")  # type: ignore[misc]
        finally:
            relay.stop()
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(1, 51))
