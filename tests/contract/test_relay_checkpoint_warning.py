"""The relay's warnings while its checkpoint cannot be saved (docs/events.md, Operation: each
error is logged as a warning "once while the relay keeps failing the same way"; "the failure
ends once the relay publishes again or is caught up"). A relay whose every event is published
but whose checkpoint store refuses the write is not caught up: it fails the same way after every
reconnect, and that must stay one warning, not one per retry."""

from __future__ import annotations

import logging

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


class RefusedCheckpoint(MemoryPositionStore):
    """A checkpoint table the relay may read but not write (a full disk, a missing grant)."""

    def save(self, position: int) -> None:
        raise PermissionError("permission denied for table relay_checkpoint")


def test_a_checkpoint_that_cannot_be_saved_is_warned_once_while_it_lasts(
    nats_server: NatsServerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="context_service.adapters.nats")
    spec = fresh_stream_spec()
    relay = Relay(MemoryFeed(make_events(3)), RefusedCheckpoint(),
                  RelaySettings(url=nats_server.url, stream=spec, backoff_initial=0.01,
                                backoff_max=0.05))
    relay.start()
    try:
        wait_until(lambda: relay.stats.errors >= 6, what="the checkpoint refused again and again")
    finally:
        relay.stop()
    assert positions_of(read_stream(nats_server.url, spec)) == [1, 2, 3]  # each event once
    refused = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING
               and "permission denied for table relay_checkpoint" in r.getMessage()]
    assert len(refused) == 1, refused
