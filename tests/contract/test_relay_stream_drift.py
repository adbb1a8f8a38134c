"""The stream edited, or deleted, while the relay is connected: the relay brought its settings in
line only at its next connection, so until then events went where no subscriber reads them
(subjects moved away), or were dropped from the stream (interest retention with no consumer, an
age limit), silently. Now it notices (JetStream's announcement of the edit, a refused publish,
a periodic check), brings its settings back as at connection, says what it found, and publishes
every later event in order; a stream it refuses at connection stops it, saying why."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

import nats
import pytest
from nats.js import JetStreamContext, api
from nats.js.errors import NotFoundError

from context_service.adapters.nats.relay import (
    UNDO_GAP,
    Relay,
    RelaySettings,
    WrongStreamError,
)
from context_service.adapters.nats.stream import StreamSpec
from context_service.logs import JsonFormatter
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.cpu_cost import least_cpu
from tests.support.nats_fixtures import (
    NatsServerHandle,
    fresh_stream_spec,
    make_events,
    positions_of,
    read_stream,
    wait_until,
    with_jetstream,
)

pytestmark = pytest.mark.nats

LOGGER = "context_service.adapters.nats"
Restored = Callable[[api.StreamConfig | None], bool]


def _edit(url: str, name: str, **settings: Any) -> None:
    """An operator's edit of the stream's config while the relay runs."""

    async def update(js: JetStreamContext) -> None:
        config = (await js.stream_info(name)).config
        await js.update_stream(dataclasses.replace(config, **settings))

    asyncio.run(with_jetstream(url, update))


def _config(url: str, name: str) -> api.StreamConfig | None:
    async def info(js: JetStreamContext) -> api.StreamConfig | None:
        try:
            return (await js.stream_info(name)).config
        except NotFoundError:
            return None

    config: api.StreamConfig | None = asyncio.run(with_jetstream(url, info))
    return config


def _delete(url: str, name: str) -> None:
    asyncio.run(with_jetstream(url, lambda js: js.delete_stream(name)))


class Unannounced(Relay):
    """A relay that never hears JetStream's announcements of an edit (core NATS may lose one):
    only a refused publish or its periodic check can tell it."""

    async def _watch_edits(self, nc: nats.NATS) -> None:
        return None


def _relay(url: str, spec: StreamSpec, feed: MemoryFeed, check_interval: float = 3600.0,
           kind: type[Relay] = Relay) -> Relay:
    """A relay publishing ``feed`` that checks the stream only every ``check_interval`` seconds
    unless told of an edit (an hour: far beyond these tests' waits)."""
    return kind(feed, MemoryPositionStore(),
                RelaySettings(url=url, stream=spec, backoff_initial=0.01, backoff_max=0.2,
                              stream_check_interval=check_interval))


def _drift_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """The relay's lines about an edit it found (and undid)."""
    return [r for r in caplog.records if r.levelno == logging.WARNING
            and r.getMessage().startswith("relay: stream ")
            and ("was edited" in r.getMessage() or "was deleted" in r.getMessage())]


def _publish_after_edit(url: str, spec: StreamSpec, relay: Relay, feed: MemoryFeed,
                        edit: Callable[[], None], restored: Restored) -> list[int]:
    """Three events published, then ``edit`` while the relay is idle: once ``restored`` holds
    for the stream's config, three more events are appended and must be published. The
    positions the stream held once restored (the edit itself may have dropped some: interest
    retention with no consumer drops every message at once)."""
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 3, what="first events published")
        edit()
        wait_until(lambda: restored(_config(url, spec.name)), timeout=10,
                   what="the relay bringing the stream back")
        kept = positions_of(read_stream(url, spec))
        feed.extend(make_events(3, start=4))
        wait_until(lambda: relay.stats.last_position == 6, timeout=10, what="later events")
    finally:
        relay.stop()
    return kept


def _covers_ours(spec: StreamSpec) -> Restored:
    return lambda config: config is not None and spec.subjects[0] in (config.subjects or [])


@pytest.mark.parametrize(
    ("setting", "value", "restored"),
    [
        ("subjects", ["elsewhere.>"], None),
        ("retention", api.RetentionPolicy.INTEREST,
         lambda c: c is not None and c.retention == api.RetentionPolicy.LIMITS),
        ("max_age", 300.0, lambda c: c is not None and not c.max_age),
        ("duplicate_window", 1.0, lambda c: c is not None and c.duplicate_window >= 26),
        ("no_ack", True, lambda c: c is not None and not c.no_ack),
    ],
    ids=["subjects-moved", "interest-retention", "age-limit", "duplicate-window", "no-ack"],
)
def test_an_owned_setting_edited_while_connected_is_brought_back_before_the_next_events(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture,
    setting: str, value: Any, restored: Restored | None,
) -> None:
    """Subjects moved away: the events reach no stream (or another). Interest retention with no
    consumer bound: each event is acknowledged, then dropped. An age limit: events expire. A
    short duplicate window: a republish is stored twice. No acks: the relay waits out its ack
    timeout for each. Each is undone while the relay is connected and idle, with one warning
    naming the setting, what it was and what it is again."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    url, feed = nats_server.url, MemoryFeed(make_events(3))
    relay = _relay(url, nats_stream, feed)
    kept = _publish_after_edit(url, nats_stream, relay, feed,
                               lambda: _edit(url, nats_stream.name, **{setting: value}),
                               restored or _covers_ours(nats_stream))
    assert kept == ([] if setting == "retention" else [1, 2, 3])
    assert positions_of(read_stream(url, nats_stream)) == [*kept, 4, 5, 6]
    assert (relay.stats.published, relay.stats.duplicates, relay.stats.errors) == (6, 0, 0)
    [warning] = _drift_warnings(caplog)
    assert setting in warning.getMessage() and "while the relay was connected" in \
        warning.getMessage()
    line = json.loads(JsonFormatter().format(warning))  # as the service logs it
    assert (line["stream"], line["deleted"], line["position"]) == (nats_stream.name, False, 3)
    assert set(line["changes"]) == {setting}
    assert line["changes"][setting]["found"] == getattr(value, "value", value)


def test_a_stream_deleted_while_connected_is_created_again_before_the_next_events(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """Deleted (by hand, by an accident) while the relay is idle: the next events found no stream
    and waited for a refused publish and a new connection; now the stream is back at once."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    url, feed = nats_server.url, MemoryFeed(make_events(3))
    relay = _relay(url, nats_stream, feed)
    _publish_after_edit(url, nats_stream, relay, feed, lambda: _delete(url, nats_stream.name),
                        lambda c: c is not None)
    assert positions_of(read_stream(url, nats_stream)) == [4, 5, 6]
    assert (relay.stats.published, relay.stats.duplicates, relay.stats.errors) == (6, 0, 0)
    [warning] = _drift_warnings(caplog)
    assert "was deleted while the relay was connected" in warning.getMessage()
    assert "position 3" in warning.getMessage()
    assert warning.deleted is True  # type: ignore[attr-defined]


def test_an_edit_never_announced_is_undone_at_the_periodic_check(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """JetStream's announcements are core NATS messages, lost with a slow or reconnecting
    client: a check at a bounded interval still finds the edit."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    url, feed = nats_server.url, MemoryFeed(make_events(3))
    relay = _relay(url, nats_stream, feed, check_interval=0.5, kind=Unannounced)
    _publish_after_edit(url, nats_stream, relay, feed,
                        lambda: _edit(url, nats_stream.name, max_age=300.0),
                        lambda c: c is not None and not c.max_age)
    assert positions_of(read_stream(url, nats_stream)) == [1, 2, 3, 4, 5, 6]
    [warning] = _drift_warnings(caplog)
    assert "max_age 300.0 -> 0.0" in warning.getMessage()


def test_a_stream_deleted_under_a_publish_is_named_when_the_relay_reconnects(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """Neither announced nor checked yet: the next publish finds no stream, the relay connects
    again and creates it; the warning says it was deleted, not only that a publish failed."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    url, feed = nats_server.url, MemoryFeed(make_events(3))
    relay = _relay(url, nats_stream, feed, kind=Unannounced)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 3, what="first events published")
        _delete(url, nats_stream.name)
        feed.extend(make_events(3, start=4))
        wait_until(lambda: relay.stats.last_position == 6, timeout=10, what="later events")
    finally:
        relay.stop()
    assert positions_of(read_stream(url, nats_stream)) == [4, 5, 6]
    assert relay.stats.duplicates == 0
    [warning] = _drift_warnings(caplog)
    assert "was deleted since the relay last connected" in warning.getMessage()


@pytest.mark.parametrize(("setting", "value", "word"),
                         [("sealed", True, "sealed"), ("max_msg_size", 512, "max_msg_size")],
                         ids=["sealed", "tiny-max-msg-size"])
def test_a_stream_made_unusable_while_connected_stops_the_relay_saying_why(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture,
    setting: str, value: Any, word: str,
) -> None:
    """A setting the relay refuses at connection is never undone while connected either: the
    relay stops publishing and says why, as at start, without waiting for an event to fail."""
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    url, feed = nats_server.url, MemoryFeed(make_events(3))
    relay = _relay(url, nats_stream, feed)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 3, what="first events published")
        _edit(url, nats_stream.name, **{setting: value})
        wait_until(lambda: "StreamMismatchError" in (relay.stats.last_error or ""), timeout=10,
                   what="the relay refusing the stream")
    finally:
        relay.stop()
    assert word in (relay.stats.last_error or "")
    config = _config(url, nats_stream.name)
    assert config is not None and getattr(config, setting) == value  # not undone
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and word in warnings[0], warnings


def test_two_relays_at_odds_over_a_setting_take_turns_instead_of_racing(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """Each undoing what the other set, on JetStream's announcement of the other's edit, would
    update the stream as fast as the server answers, a warning each time (two services given
    one stream with different duplicate windows, say): an edit undone on an announcement waits
    ``UNDO_GAP`` after the same relay's previous one, so they take turns, each saying so."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    url = nats_server.url
    other = dataclasses.replace(nats_stream, duplicate_window=60.0)
    relays = [_relay(url, spec, MemoryFeed(make_events(3))) for spec in (nats_stream, other)]
    for relay in relays:
        relay.start()
    try:
        wait_until(lambda: len(_drift_warnings(caplog)) >= 6, timeout=15, what="their turns")
    finally:
        for relay in relays:
            relay.stop()
    for undone in ("60.0 -> 120.0", "120.0 -> 60.0"):  # each relay's own undoing
        times = [r.created for r in _drift_warnings(caplog) if undone in r.getMessage()]
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert gaps and min(gaps) >= 0.9 * UNDO_GAP, (undone, gaps)


def test_an_ack_from_another_stream_is_not_taken_for_the_event_being_published() -> None:
    """Every message names the stream it must land in, so a server honouring that never acks
    from another; one that does not would have the relay take the ack for its own, and the
    event would be where no subscriber reads it, never published again."""
    spec = fresh_stream_spec()
    relay = Relay(MemoryFeed(make_events(2)), MemoryPositionStore(),
                  RelaySettings(url="nats://127.0.0.1:1", stream=spec))
    relay._on_ack(1, api.PubAck(stream=spec.name, seq=1))
    with pytest.raises(WrongStreamError, match=f"stream OTHER .* position 2, not {spec.name}"):
        relay._on_ack(2, api.PubAck(stream="OTHER", seq=1))
    assert (relay.stats.last_position, relay.stats.published) == (1, 1)


# -- what the check costs ---------------------------------------------------------------------


class Counted(Relay):
    """A relay counting its checks of the stream (the one at connection included)."""

    checks = 0

    async def _bring_in_line(self, js: JetStreamContext, connected: bool) -> Any:
        self.checks += 1
        return await super()._bring_in_line(js, connected)


class Unchecked(Counted):
    """The relay without the check: no announcements heard, never due."""

    async def _watch_edits(self, nc: nats.NATS) -> None:
        return None

    def _edited_or_due(self) -> bool:
        return False


def _relay_cpu(url: str, kind: type[Counted], count: int, check_interval: float) -> float:
    """CPU time of the relay's event loop (run on this thread) publishing ``count`` events into
    a stream of its own; the feed's calls run in the relay's pool, alike for every kind."""
    events = make_events(count)

    def publish() -> None:
        spec = fresh_stream_spec()
        settings = RelaySettings(url=url, stream=spec, stream_check_interval=check_interval)
        relay = kind(MemoryFeed(events), MemoryPositionStore(), settings)

        async def until_published() -> None:
            while relay.stats.last_position < count:
                await asyncio.sleep(0.005)
            relay.request_stop()

        async def main() -> None:
            await asyncio.gather(relay.run(), until_published())

        try:
            asyncio.run(main())
        finally:
            _delete(url, spec.name)
        assert relay.stats.published == count
        if kind is Unchecked:
            assert relay.checks == 1  # at connection only, as before
        else:
            assert relay.checks > count // settings.batch_size  # and before every batch

    return least_cpu(publish)


def test_checking_the_stream_at_every_batch_costs_next_to_nothing_per_event(
    nats_server: NatsServerHandle,
) -> None:
    """The check runs between batches (every 10 s by default, or when JetStream announces an
    edit), never per event: even at every batch of 512 events, the worst case, its round trip
    is lost in the cost of publishing them."""
    count = 4096
    unchecked = _relay_cpu(nats_server.url, Unchecked, count, 3600.0)
    checked = _relay_cpu(nats_server.url, Counted, count, 0.0)
    assert checked / unchecked < 1.25, (
        f"checking at every batch costs {checked / unchecked:.2f} times the relay without it")
