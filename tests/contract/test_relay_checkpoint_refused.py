"""A checkpoint that cannot be saved, while events keep coming: each retry publishes the new
events, and the failure is the same one until a checkpoint is saved, so it is warned once, not
once per retry (docs/events.md, Operation)."""

from __future__ import annotations

import logging

import pytest

from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import (
    NatsServerHandle,
    fresh_stream_spec,
    make_events,
    wait_until,
)

pytestmark = pytest.mark.nats


class RefusedWhileBusy(MemoryPositionStore):
    """A checkpoint table the relay may not write, in front of a log that grows by one event
    each time the relay tries (a busy workspace)."""

    def __init__(self, feed: MemoryFeed) -> None:
        super().__init__()
        self.feed = feed

    def save(self, position: int) -> None:
        self.feed.extend(make_events(1, start=self.feed.head + 1))
        raise PermissionError("permission denied for table relay_checkpoint")


def test_a_checkpoint_refused_while_events_keep_coming_is_warned_once(
    nats_server: NatsServerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="context_service.adapters.nats")
    feed = MemoryFeed(make_events(3))
    relay = Relay(feed, RefusedWhileBusy(feed),
                  RelaySettings(url=nats_server.url, stream=fresh_stream_spec(),
                                backoff_initial=0.01, backoff_max=0.05))
    relay.start()
    try:
        wait_until(lambda: relay.stats.errors >= 6, what="the checkpoint refused again and again")
    finally:
        relay.stop()
    assert relay.stats.published >= 6  # every retry published what came meanwhile
    refused = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
               and "permission denied for table relay_checkpoint" in r.getMessage()]
    assert len(refused) == 1, refused
