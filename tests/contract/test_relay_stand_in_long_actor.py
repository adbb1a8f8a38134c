"""An event whose stand-in is itself above the stream's ``max_msg_size``.

The day's change sends an event above the stream's ``max_msg_size`` as its stand-in (the
envelope without its data) and refuses a ``max_msg_size`` below 4,096 bytes at start, taking
every stand-in to fit in that. A stand-in keeps the event's ``actor``, though: the caller's
subject (``X-Context-Subject``), which nothing bounds. With a subject of a few KiB the stand-in
was refused at every retry on a stream at 4,096 bytes (accepted at start), and the relay stopped
at that event for good, the failure the change meant to end.
"""

from __future__ import annotations

import msgspec
import pytest

from context_service.adapters.nats.envelope import decode
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import MIN_MSG_SIZE, StreamSpec
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import (
    NatsServerHandle,
    create_stream,
    make_events,
    positions_of,
    read_stream,
    wait_until,
)

pytestmark = pytest.mark.nats
LONG_ACTOR = "user:" + "a" * 5000  # a subject the gateway passed on, as long as it was


def test_an_event_of_a_long_subject_still_goes_out_as_a_stand_in_that_fits(
        nats_server: NatsServerHandle, nats_stream: StreamSpec) -> None:
    create_stream(nats_server.url, nats_stream, max_msg_size=MIN_MSG_SIZE)
    large = msgspec.structs.replace(make_events(1, start=2)[0], actor=LONG_ACTOR,
                                    data={"note": "x" * 20_000})
    feed = MemoryFeed([*make_events(1), large, *make_events(1, start=3)])
    relay = Relay(feed, MemoryPositionStore(), RelaySettings(
        url=nats_server.url, stream=nats_stream, backoff_initial=0.01, backoff_max=0.2))
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 3, timeout=10, what="published past it")
    finally:
        relay.stop()
    messages = read_stream(nats_server.url, nats_stream)
    assert positions_of(messages) == [1, 2, 3]
    assert messages[1].headers["Cs-Data-Omitted"] == "too-large"
    stand_in = decode(messages[1].payload)
    assert stand_in.data == {} and stand_in.event_id == large.event_id
    assert all(len(m.payload) <= MIN_MSG_SIZE for m in messages)
