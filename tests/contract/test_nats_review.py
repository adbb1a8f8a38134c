"""What a downstream subscriber meets at the edges: ``events tail`` stopped mid-batch (Ctrl-C),
messages in the stream that are not envelopes, and streams an operator set up differently."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
from pathlib import Path

import msgspec
import nats
import pytest
from jsonschema import Draft202012Validator
from nats.js import api

from context_service.adapters.eventstore.mapper import decode_event, from_stored, to_stored
from context_service.adapters.eventstore.outbox import logged
from context_service.adapters.nats.envelope import (
    decode,
    encode,
    envelope_of,
    namespace_token,
    subject_for,
)
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import StreamMismatchError, StreamSpec, ensure_stream
from context_service.adapters.nats.tail import tail
from context_service.domain.stream import StreamRef
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import (
    NatsServerHandle,
    make_events,
    positions_of,
    publish_feed,
    read_stream,
    wait_until,
)

pytestmark = pytest.mark.nats


class InterruptedOutput(io.StringIO):
    """Standard output on which Ctrl-C lands while the ``after``-th line is being written."""

    def __init__(self, after: int) -> None:
        super().__init__()
        self.after = after

    def write(self, text: str) -> int:
        if self.getvalue().count("\n") == self.after:
            raise KeyboardInterrupt
        return super().write(text)


def _positions(out: io.StringIO) -> list[int]:
    return [json.loads(line)["position"] for line in out.getvalue().splitlines()]


def test_ctrl_c_reaches_the_command_as_an_interrupt(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    publish_feed(nats_server.url, nats_stream, MemoryFeed(make_events(5)))
    with pytest.raises(KeyboardInterrupt):  # the CLI turns it into exit 130, one line
        tail(nats_server.url, f"{nats_stream.subject_prefix}.>", "ctrl-c", InterruptedOutput(2),
             stream=nats_stream.name)


def test_after_ctrl_c_mid_batch_the_durable_continues_in_order(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    """The tail fetches events in batches; those fetched but not printed when Ctrl-C came must be
    the next ones the durable delivers, not held back until their ack wait runs out."""
    feed = MemoryFeed(make_events(30))
    publish_feed(nats_server.url, nats_stream, feed)
    everything = f"{nats_stream.subject_prefix}.>"
    first = InterruptedOutput(10)
    with pytest.raises(KeyboardInterrupt):
        tail(nats_server.url, everything, "resumed", first, stream=nats_stream.name)
    feed.extend(make_events(10, start=31))
    publish_feed(nats_server.url, nats_stream, feed)
    second = io.StringIO()
    assert tail(nats_server.url, everything, "resumed", second, limit=30,
                stream=nats_stream.name) == 30
    assert _positions(first) + _positions(second) == list(range(1, 41))


async def _publish_raw(url: str, subject: str, payloads: list[bytes]) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        for payload in payloads:
            await js.publish(subject, payload)
    finally:
        await nc.close()


NOT_ENVELOPES = [b"[1, 2]", b'"just a string"', b"not json at all", b'{"position": "x"}',
                 b'{\n  "multi": "line"\n}']


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_messages_that_are_not_envelopes_are_passed_over(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, fmt: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    feed = MemoryFeed(make_events(2))
    publish_feed(nats_server.url, nats_stream, feed)
    foreign = f"{nats_stream.subject_prefix}.team-a.other.Thing"
    asyncio.run(_publish_raw(nats_server.url, foreign, NOT_ENVELOPES))
    feed.extend(make_events(2, start=3))
    publish_feed(nats_server.url, nats_stream, feed)
    out = io.StringIO()
    count = tail(nats_server.url, f"{nats_stream.subject_prefix}.>", f"foreign-{fmt}", out,
                 limit=4, stream=nats_stream.name, fmt=fmt)
    lines = out.getvalue().splitlines()
    assert count == 4 and len(lines) == 4
    if fmt == "json":
        assert [json.loads(line)["position"] for line in lines] == [1, 2, 3, 4]
    else:
        assert [line.split()[0] for line in lines] == ["#1", "#2", "#3", "#4"]
    skipped = [line for line in capsys.readouterr().err.splitlines()
               if line.startswith("events tail: ")]
    assert len(skipped) == len(NOT_ENVELOPES)
    assert all("not an event envelope" in line and foreign in line for line in skipped)


@pytest.mark.parametrize(
    "setting",
    [{"retention": api.RetentionPolicy.INTEREST}, {"no_ack": True}],
    ids=["interest-retention", "no-acks"],
)
def test_a_stream_that_would_lose_or_never_ack_events_is_brought_in_line(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, setting: dict[str, object]
) -> None:
    """Interest retention drops what no consumer is bound to; without acks the relay, which
    checkpoints only acknowledged events, never gets past the first message."""

    async def run() -> api.StreamConfig:
        nc = await nats.connect(nats_server.url)
        try:
            js = nc.jetstream()
            await js.add_stream(dataclasses.replace(nats_stream.config(), **setting))
            return (await ensure_stream(js, nats_stream)).config
        finally:
            await nc.close()

    config = asyncio.run(run())
    assert (config.retention, config.no_ack) == (api.RetentionPolicy.LIMITS, False)
    feed = MemoryFeed(make_events(20))
    publish_feed(nats_server.url, nats_stream, feed)
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(1, 21))


def test_a_work_queue_stream_is_refused(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    """A work queue deletes each event once one consumer acknowledged it, and the server cannot
    change that in place: the relay refuses it, as it refuses memory storage."""

    async def run() -> None:
        nc = await nats.connect(nats_server.url)
        try:
            js = nc.jetstream()
            config = dataclasses.replace(nats_stream.config(),
                                         retention=api.RetentionPolicy.WORK_QUEUE)
            await js.add_stream(config)
            with pytest.raises(StreamMismatchError, match="limits retention is required"):
                await ensure_stream(js, nats_stream)
        finally:
            await nc.close()

    asyncio.run(run())


async def _delete_stream(url: str, name: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().delete_stream(name)
    finally:
        await nc.close()


async def _move_subjects(url: str, spec: StreamSpec) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        config = (await js.stream_info(spec.name)).config
        await js.update_stream(dataclasses.replace(config, subjects=["elsewhere.>"]))
    finally:
        await nc.close()


@pytest.mark.parametrize("operator", ["deletes", "moves-subjects"])
def test_a_stream_an_operator_deletes_or_reconfigures_is_restored_by_the_running_relay(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, operator: str
) -> None:
    feed = MemoryFeed(make_events(50))
    settings = RelaySettings(url=nats_server.url, stream=nats_stream, backoff_initial=0.01)
    relay = Relay(feed, MemoryPositionStore(), settings)
    relay.start()
    try:
        wait_until(lambda: relay.stats.saved_position == 50, what="caught up")
        if operator == "deletes":
            asyncio.run(_delete_stream(nats_server.url, nats_stream.name))
        else:
            asyncio.run(_move_subjects(nats_server.url, nats_stream))
        feed.extend(make_events(30, start=51))
        wait_until(lambda: relay.stats.last_position == 80, what="published after the change")
    finally:
        relay.stop()
    published = positions_of(read_stream(nats_server.url, nats_stream))
    assert published == (list(range(51, 81)) if operator == "deletes" else list(range(1, 81)))


def test_metrics_after_a_restart_show_the_checkpoint_while_nats_is_away(
    nats_stream: StreamSpec,
) -> None:
    from tests.support.nats_fixtures import free_port

    settings = RelaySettings(url=f"nats://127.0.0.1:{free_port()}", stream=nats_stream)
    relay = Relay(MemoryFeed(make_events(80)), MemoryPositionStore(50), settings)
    relay.start()
    try:
        wait_until(lambda: relay.stats.errors >= 1, what="a failed connection")
        stats = relay.stats
    finally:
        relay.stop()
    assert (stats.last_position, stats.saved_position, stats.connected) == (50, 50, False)


def test_restarted_many_times_every_position_once(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    feed, store = MemoryFeed(), MemoryPositionStore()
    settings = RelaySettings(url=nats_server.url, stream=nats_stream, save_interval=60.0,
                             save_every=10**9)
    published = 0
    for round_ in range(8):
        feed.extend(make_events(25, start=round_ * 25 + 1))
        relay = Relay(feed, store, settings)
        relay.start()
        wait_until(lambda r=relay: r.stats.last_position == feed.head, what="round published")
        (relay.kill if round_ % 2 else relay.stop)()
        assert relay.stats.duplicates == 0
        published += relay.stats.published
    assert published == 200
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(1, 201))


UNUSUAL_NAMESPACES = ["équipe", "日本", "a\u2028b", "x\u00a0y", "50%", "_", "a.b", "*", ">",
                      "tab\tx", "\u200bzero-width", "emoji🙂"]


def test_unusual_namespaces_reach_a_subscriber_filtering_on_their_token(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    events = [msgspec.structs.replace(e, namespace=ns)
              for e, ns in zip(make_events(len(UNUSUAL_NAMESPACES)), UNUSUAL_NAMESPACES,
                               strict=True)]
    publish_feed(nats_server.url, nats_stream, MemoryFeed(events))
    messages = read_stream(nats_server.url, nats_stream)
    assert [m.json["namespace"] for m in messages] == UNUSUAL_NAMESPACES
    for event in events:
        token = namespace_token(event.namespace)
        out = io.StringIO()
        filtered = f"{nats_stream.subject_prefix}.{token}.>"
        assert tail(nats_server.url, filtered, f"ns-{event.position}", out, limit=1,
                    stream=nats_stream.name) == 1
        assert json.loads(out.getvalue())["namespace"] == event.namespace


GOLDEN = sorted((Path(__file__).resolve().parents[1] / "golden" / "events").glob("*.json"))
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "event-envelope.schema.json")
                    .read_text())


@pytest.mark.parametrize("path", GOLDEN, ids=[path.name for path in GOLDEN])
@pytest.mark.parametrize("namespace", ["acme", ""], ids=["namespaced", "no-namespace"])
def test_every_registered_event_type_is_published_as_a_valid_envelope(
    path: Path, namespace: str
) -> None:
    name = path.name.split(".", 1)[0]
    stream = StreamRef("context", namespace, "key")
    stored = to_stored(stream, 3, decode_event(name, path.read_bytes()))
    envelope = envelope_of(logged(from_stored(9, 3, stored.topic, stored.state)))
    body = json.loads(encode(envelope))
    Draft202012Validator(SCHEMA).validate(body)
    assert list(body) == list(SCHEMA["properties"])
    assert "secret_hash" not in body["data"] and "at" not in body["data"]
    assert subject_for(envelope.namespace, envelope.aggregate, envelope.name) == (
        f"context.events.{namespace or '_'}.context.{name}")


def test_the_documented_example_is_what_the_code_encodes() -> None:
    [example] = SCHEMA["examples"]
    assert json.loads(encode(decode(json.dumps(example).encode()))) == example


class UnsavedCheckpoint(MemoryPositionStore):
    """A relay that crashed each time before its checkpoint was written."""

    def save(self, position: int) -> None:
        return None


def test_a_foreign_message_at_the_streams_end_does_not_hide_where_the_relay_stopped(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    """Resuming from a checkpoint that lags republishes events the stream holds: harmless inside
    the duplicate window, duplicates after it. Another publisher's message after the relay's last
    one must not send the relay back to its checkpoint."""
    feed, store = MemoryFeed(make_events(60)), MemoryPositionStore()
    first = Relay(feed, UnsavedCheckpoint(), RelaySettings(url=nats_server.url,
                                                           stream=nats_stream))
    first.start()
    wait_until(lambda: first.stats.last_position == 60, what="published")
    first.kill()
    foreign = f"{nats_stream.subject_prefix}.team-a.other.Thing"
    asyncio.run(_publish_raw(nats_server.url, foreign, [b"not an envelope"] * 3))
    feed.extend(make_events(10, start=61))
    second = Relay(feed, store, RelaySettings(url=nats_server.url, stream=nats_stream))
    second.start()
    try:
        wait_until(lambda: second.stats.last_position == 70, what="resumed")
    finally:
        second.stop()
    assert (second.stats.duplicates, second.stats.published) == (0, 10)
    published = [m for m in read_stream(nats_server.url, nats_stream) if m.subject != foreign]
    assert positions_of(published) == list(range(1, 71))
