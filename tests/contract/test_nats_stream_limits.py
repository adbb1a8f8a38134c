"""Stream settings an operator can set by hand, against the relay's promise: no event is silently
lost or reordered on the bus; a setting that would make it so is brought in line at start or
refused with one clear log line; the relay never retries one event for ever."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import logging
from typing import Any

import msgspec
import pytest
from nats.js import JetStreamContext, api
from nats.js.errors import NotFoundError

from context_service.adapters.nats import relay as relay_module
from context_service.adapters.nats.envelope import decode
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import StreamMismatchError, StreamSpec, ensure_stream
from context_service.adapters.nats.tail import tail
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import (
    NatsServerHandle,
    create_stream,
    make_events,
    positions_of,
    publish_feed,
    read_stream,
    wait_until,
    with_jetstream,
)

pytestmark = pytest.mark.nats


def _edit(url: str, name: str, **settings: Any) -> None:
    """An operator's edit of the stream's config, while the relay may be running."""

    async def update(js: JetStreamContext) -> None:
        config = (await js.stream_info(name)).config
        await js.update_stream(dataclasses.replace(config, **settings))

    asyncio.run(with_jetstream(url, update))


def _config(url: str, name: str) -> api.StreamConfig:
    async def info(js: JetStreamContext) -> api.StreamConfig:
        return (await js.stream_info(name)).config

    config: api.StreamConfig = asyncio.run(with_jetstream(url, info))
    return config


def _relay(url: str, spec: StreamSpec, feed: MemoryFeed) -> Relay:
    return Relay(feed, MemoryPositionStore(),
                 RelaySettings(url=url, stream=spec, backoff_initial=0.01, backoff_max=0.2))


def _large(position: int) -> Any:
    return msgspec.structs.replace(make_events(1, start=position)[0], data={"note": "x" * 20_000})


# -- max_msg_size: the stand-in, as for the server's max_payload -------------------------------


def test_an_event_above_the_streams_max_msg_size_is_published_as_its_stand_in(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """A stream whose max_msg_size is below one event refused that event at every retry: the
    relay stopped there for good. It must go on as for an event above max_payload."""
    caplog.set_level(logging.INFO, logger="context_service.adapters.nats")
    create_stream(nats_server.url, nats_stream, max_msg_size=8192)
    feed = MemoryFeed([*make_events(1), _large(2), *make_events(2, start=3)])
    relay = _relay(nats_server.url, nats_stream, feed)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 4, timeout=10, what="published past it")
    finally:
        relay.stop()
    messages = read_stream(nats_server.url, nats_stream)
    assert positions_of(messages) == [1, 2, 3, 4]
    assert messages[1].headers["Cs-Data-Omitted"] == "too-large"
    assert decode(messages[1].payload) == msgspec.structs.replace(_large(2), data={})
    assert "Cs-Data-Omitted" not in messages[2].headers
    assert (relay.stats.omitted, relay.stats.duplicates) == (1, 0)
    [error] = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert "position 2" in error and "max_msg_size" in error


def test_a_max_msg_size_lowered_while_the_relay_runs_gives_the_stand_in_too(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    feed = MemoryFeed(make_events(3))
    relay = _relay(nats_server.url, nats_stream, feed)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 3, what="published")
        _edit(nats_server.url, nats_stream.name, max_msg_size=8192)
        feed.extend([_large(4), *make_events(2, start=5)])
        wait_until(lambda: relay.stats.last_position == 6, timeout=10, what="published past it")
    finally:
        relay.stop()
    messages = read_stream(nats_server.url, nats_stream)
    assert positions_of(messages) == [1, 2, 3, 4, 5, 6]
    assert messages[3].headers["Cs-Data-Omitted"] == "too-large"
    assert (relay.stats.omitted, relay.stats.duplicates) == (1, 0)


def test_a_max_msg_size_too_small_for_a_stand_in_is_refused_at_start(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    """Below a few KiB not even an event's stand-in fits: the relay would retry it for ever."""
    create_stream(nats_server.url, nats_stream, max_msg_size=512)
    with pytest.raises(StreamMismatchError, match="max_msg_size"):
        asyncio.run(with_jetstream(nats_server.url, lambda js: ensure_stream(js, nats_stream)))


# -- max_msgs_per_subject with discard new ------------------------------------------------------


def test_a_per_subject_limit_with_discard_new_holds_events_back_instead_of_dropping_older_ones(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    """JetStream applies discard new to max_msgs and max_bytes only: at max_msgs_per_subject it
    silently drops the subject's oldest message unless discard_new_per_subject is set."""
    create_stream(nats_server.url, nats_stream, max_msgs_per_subject=2,
            discard=api.DiscardPolicy.NEW)
    relay = _relay(nats_server.url, nats_stream, MemoryFeed(make_events(12)))  # 4 subjects
    relay.start()
    try:
        wait_until(lambda: relay.stats.stream_full or relay.stats.last_position == 12,
                   timeout=10, what="a full stream, or everything acknowledged")
        held = positions_of(read_stream(nats_server.url, nats_stream))
        _edit(nats_server.url, nats_stream.name, max_msgs_per_subject=3)
        wait_until(lambda: relay.stats.last_position == 12, what="published once there is room")
    finally:
        relay.stop()
    assert held == list(range(1, 9))  # two of each subject, none dropped nor stored past them
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(1, 13))
    assert _config(nats_server.url, nats_stream.name).discard_new_per_subject


# -- streams the relay cannot publish into as it must --------------------------------------------


def _seal(url: str, spec: StreamSpec) -> None:
    create_stream(url, spec)
    _edit(url, spec.name, sealed=True)


def _mirror(url: str, spec: StreamSpec) -> None:
    origin = dataclasses.replace(spec, name=f"{spec.name}_ORIGIN")
    create_stream(url, origin)
    config = api.StreamConfig(name=spec.name, storage=api.StorageType.FILE,
                              mirror=api.StreamSource(name=origin.name))
    asyncio.run(with_jetstream(url, lambda js: js.add_stream(config)))


def _sourcing(url: str, spec: StreamSpec) -> None:
    other = dataclasses.replace(spec, name=f"{spec.name}_ORIGIN", subject_prefix="elsewhere")
    create_stream(url, other)
    create_stream(url, spec, sources=[api.StreamSource(name=other.name)])


@pytest.mark.parametrize(("make", "word"), [(_seal, "sealed"), (_mirror, "mirror"),
                                            (_sourcing, "sources")],
                         ids=["sealed", "mirror", "sources"])
def test_a_stream_the_relay_cannot_publish_into_in_order_is_refused_with_one_clear_line(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture,
    make: Any, word: str,
) -> None:
    """Sealed: it takes no message, ever. A mirror: no publish at all. Sources: another stream's
    messages, with their own Nats-Msg-Id, land between the events (the order check fails at
    each, and another log's envelopes would reach subscribers as events)."""
    caplog.set_level(logging.DEBUG, logger="context_service.adapters.nats")
    make(nats_server.url, nats_stream)
    relay = _relay(nats_server.url, nats_stream, MemoryFeed(make_events(3)))
    relay.start()
    try:
        wait_until(lambda: relay.stats.errors >= 3, what="refusals")
    finally:
        relay.stop()
        asyncio.run(with_jetstream(nats_server.url, _deleted(f"{nats_stream.name}_ORIGIN")))
    assert word in (relay.stats.last_error or "")
    assert "StreamMismatchError" in (relay.stats.last_error or "")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert relay.stats.published == 0


def _deleted(*names: str) -> Any:
    """Delete the streams ``names`` where they exist (other than the fixture's own)."""

    async def delete(js: JetStreamContext) -> None:
        for name in names:
            with contextlib.suppress(NotFoundError):
                await js.delete_stream(name)

    return delete


# -- subjects narrowed while the relay runs ------------------------------------------------------


class NarrowedAtResume(Relay):
    """A relay whose stream an operator narrows, giving the rest of its subjects to a stream of
    their own, between the relay bringing it in line and its first publish."""

    other: StreamSpec
    narrowed = False

    async def _stream_tail(self, js: JetStreamContext) -> int:
        start = await super()._stream_tail(js)
        if not self.narrowed:
            self.narrowed = True
            spec = self._settings.stream
            info = await js.stream_info(spec.name)
            await js.update_stream(dataclasses.replace(
                info.config, subjects=[f"{spec.subject_prefix}.team-a.>"]))
            await js.add_stream(self.other.config())
        return start


def test_an_event_never_lands_in_another_stream_that_took_its_subject(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    """Without naming the stream it expects, the relay took another stream's ack for its own:
    the event was in neither the stream nor ever published again."""
    events = make_events(4)
    other = dataclasses.replace(nats_stream, name=f"{nats_stream.name}_ORIGIN",
                                subject_prefix=f"{nats_stream.subject_prefix}._")
    relay = NarrowedAtResume(MemoryFeed(events), MemoryPositionStore(),
                             RelaySettings(url=nats_server.url, stream=nats_stream,
                                           backoff_initial=0.01, backoff_max=0.2))
    relay.other = other
    relay.start()
    try:
        wait_until(lambda: relay.narrowed and relay.stats.errors >= 2, what="refusals")
        taken = read_stream(nats_server.url, other)
        asyncio.run(with_jetstream(nats_server.url, lambda js: js.delete_stream(other.name)))
        wait_until(lambda: relay.stats.last_position == 4, what="published once it is undone")
    finally:
        relay.stop()
        asyncio.run(with_jetstream(nats_server.url, _deleted(other.name)))
    assert taken == []
    assert positions_of(read_stream(nats_server.url, nats_stream)) == [1, 2, 3, 4]


# -- the duplicate window the relay's own retries need -------------------------------------------


def test_a_duplicate_window_shorter_than_a_resume_is_brought_in_line_with_one_line(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, caplog: pytest.LogCaptureFixture
) -> None:
    """A publish whose ack timed out may be stored by the time the relay publishes it again
    (after the ack timeout, a backoff and a new connection): only the duplicate window then
    keeps it from being stored twice."""
    caplog.set_level(logging.INFO, logger="context_service.adapters.nats")
    short = dataclasses.replace(nats_stream, duplicate_window=1.0)
    settings = RelaySettings(url=nats_server.url, stream=short)
    relay = Relay(MemoryFeed(make_events(2)), MemoryPositionStore(), settings)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 2, what="published")
    finally:
        relay.stop()
    needed = settings.ack_timeout + settings.connect_timeout + 1.2 * settings.backoff_max
    assert _config(nats_server.url, nats_stream.name).duplicate_window >= needed
    assert relay_module.resume_window(settings) >= needed
    lines = [r.getMessage() for r in caplog.records if "duplicate window" in r.getMessage()]
    assert len(lines) == 1 and r"1s" in lines[0], lines


# -- settings the relay accepts as they are -------------------------------------------------------


@pytest.mark.parametrize("setting", ["deny_delete", "deny_purge"])
def test_a_stream_that_denies_deletes_and_purges_is_published_and_read_in_full(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, setting: str
) -> None:
    """Neither the relay nor events tail deletes or purges a message: such a stream is fine."""
    create_stream(nats_server.url, nats_stream, **{setting: True})
    publish_feed(nats_server.url, nats_stream, MemoryFeed(make_events(5)))
    out = io.StringIO()
    assert tail(nats_server.url, f"{nats_stream.subject_prefix}.>", "denies", out, limit=5,
                stream=nats_stream.name) == 5
    assert [json.loads(line)["position"] for line in out.getvalue().splitlines()] == [1, 2, 3,
                                                                                      4, 5]
    assert getattr(_config(nats_server.url, nats_stream.name), setting) is True


# -- events tail: one event per line, for every reader of lines -----------------------------------


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_tail_escapes_the_line_separators_some_readers_break_lines_at(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, fmt: str
) -> None:
    """U+2028, U+2029 and U+0085 are valid raw in JSON strings, yet terminals, log viewers and
    ``str.splitlines`` end a line there: written escaped, the JSON stays the same value."""
    odd = "a\u2028b\u2029c\x85d"
    events = [msgspec.structs.replace(e, actor=f"user:{odd}", data={"note": odd})
              for e in make_events(2)]
    publish_feed(nats_server.url, nats_stream, MemoryFeed(events))
    out = io.StringIO()
    assert tail(nats_server.url, f"{nats_stream.subject_prefix}.>", f"separators-{fmt}", out,
                limit=2, stream=nats_stream.name, fmt=fmt) == 2
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert not {"\u2028", "\u2029", "\x85"} & set(out.getvalue())
    if fmt == "json":
        assert [decode(line.encode()) for line in lines] == events
