"""The relay, ``events tail`` and the history export held to their written contract
(docs/events.md, docs/operations.md, agent-context-api.md §12): the edges a subscriber or an
operator meets: subjects outside the stream's events, a stream deleted under the tail, lines that
must stay one per event, a failure that recurs on every reconnect, an event too large for the
server (and its republish), and export files changed after the fact."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import io
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import msgspec
import nats
import pytest
from jsonschema import Draft202012Validator

from context_service.adapters.eventstore.export import export, verify, verify_file
from context_service.adapters.nats.envelope import SUBJECT_PREFIX, encode, subject_for
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.server import find_binary, probe
from context_service.adapters.nats.stream import STREAM_NAME, StreamSpec
from context_service.adapters.nats.tail import TailError, tail
from context_service.bootstrap import Container
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.projections.history import write_history
from tests.support.nats_fixtures import (
    NatsServerHandle,
    free_port,
    fresh_stream_spec,
    make_events,
    positions_of,
    publish_feed,
    read_stream,
    wait_until,
    with_jetstream,
)

pytestmark = pytest.mark.nats


async def _add_stream(url: str, config: object) -> None:
    await with_jetstream(url, lambda js: js.add_stream(config))


async def _publish_raw(url: str, subject: str, payload: bytes) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().publish(subject, payload)
    finally:
        await nc.close()


# -- events tail -------------------------------------------------------------------------------


def test_tail_refuses_a_subject_outside_the_events_even_when_the_stream_holds_it(
    private_nats_server: NatsServerHandle,
) -> None:
    """docs/events.md, Consuming: "A subject outside `context.events.>` is an error." The
    Stream section lets an operator widen the stream's subjects (`context.>`, `audit.>` beside
    it), so the stream's subjects cannot be the test: `--subject context.audit.>` must still be
    refused, not followed (here it would even print another publisher's envelope as an event)."""
    url = private_nats_server.url
    spec = StreamSpec()  # the service's own stream, CONTEXT_EVENTS on context.events.>
    assert (spec.name, spec.subject_prefix) == (STREAM_NAME, SUBJECT_PREFIX)
    asyncio.run(_add_stream(url, dataclasses.replace(spec.config(), subjects=["context.>"])))
    publish_feed(url, spec, MemoryFeed(make_events(2)))
    foreign = msgspec.structs.replace(make_events(1, start=9)[0], name="Audited")
    asyncio.run(_publish_raw(url, "context.audit.Audited", encode(foreign)))
    out = io.StringIO()
    with pytest.raises(TailError, match="outside"):
        tail(url, "context.audit.>", "audit-reader", out, limit=1, connect_wait=5)
    assert out.getvalue() == ""
    # the events themselves are still followed on that stream
    assert tail(url, f"{SUBJECT_PREFIX}.>", "event-reader", out, limit=2) == 2
    assert [json.loads(line)["position"] for line in out.getvalue().splitlines()] == [1, 2]
    # and the command says so in one line, exit code 1 (operations.md)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CS_")},
           "CS_NATS_URL": url, "CS_LOG_FORMAT": "json"}
    command = subprocess.run(
        [sys.executable, "-m", "context_service.cli", "events", "tail", "--subject",
         "context.audit.>", "--limit", "1"], env=env, text=True, capture_output=True,
        timeout=60, check=False)
    assert (command.returncode, command.stdout) == (1, ""), command.stderr
    assert command.stderr.startswith("context-service: ") and command.stderr.count("\n") == 1
    assert "outside" in command.stderr and "context.events.>" in command.stderr


def test_text_format_keeps_one_line_per_event_whatever_its_strings_hold(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    """docs/events.md, Consuming: `--format text` prints "one readable line per event". The
    envelope's strings (namespace, aggregate id, actor) are the publisher's: a line break or a
    terminal control in them must not split an event over two lines or reach the terminal raw;
    `data` is already JSON (escaped) and a plain line is printed as it always was."""
    odd = ["team\nb", None, "ns\u2028x"]
    events = [msgspec.structs.replace(e, namespace=ns, actor=f"user:a\r\n#99 forged\x1b[2J{i}")
              for i, (e, ns) in enumerate(zip(make_events(3), odd, strict=True))]
    publish_feed(nats_server.url, nats_stream, MemoryFeed([*events, *make_events(1, start=4)]))
    out = io.StringIO()
    assert tail(nats_server.url, f"{nats_stream.subject_prefix}.>", "text-lines", out, limit=4,
                stream=nats_stream.name, fmt="text") == 4
    lines = out.getvalue().splitlines()
    assert [line.split()[0] for line in lines] == ["#1", "#2", "#3", "#4"], lines
    assert "\x1b" not in out.getvalue()
    plain = make_events(1, start=4)[0]
    assert lines[3] == (f"#4 2025-01-01T00:00:00.004000Z {plain.namespace}/context/"
                        f"{plain.aggregate_id}@{plain.version} {plain.name} by "
                        f"{plain.actor} {json.dumps(plain.data, separators=(',', ':'))}")


@pytest.mark.parametrize("gone", ["stream", "consumer"])
def test_tail_whose_stream_or_consumer_is_deleted_ends_with_its_own_error(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, gone: str
) -> None:
    """operations.md, The other commands at a terminal: a failure of `events tail` is one line
    on standard error and exit code 1 ("cannot ... consume the subject"), never a traceback: the
    command turns a `TailError` into that line. A stream or durable deleted while the tail waits
    for events must end it with one, not with a raw NATS exception (a 503 from the client)."""
    publish_feed(nats_server.url, nats_stream, MemoryFeed(make_events(3)))
    out, raised = io.StringIO(), []

    def follow() -> None:
        try:
            tail(nats_server.url, f"{nats_stream.subject_prefix}.>", "deleted", out, limit=10,
                 stream=nats_stream.name)
        except BaseException as exc:  # what ended it is the finding
            raised.append(exc)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    wait_until(lambda: out.getvalue().count("\n") == 3, what="the events printed")

    async def delete() -> None:
        nc = await nats.connect(nats_server.url)
        try:
            js = nc.jetstream()
            if gone == "stream":
                await js.delete_stream(nats_stream.name)
            else:
                await js.delete_consumer(nats_stream.name, "deleted")
        finally:
            await nc.close()

    asyncio.run(delete())
    reader.join(15)
    assert not reader.is_alive(), "the tail went on waiting for a stream that is gone"
    assert len(raised) == 1 and isinstance(raised[0], TailError), raised
    assert nats_stream.name in str(raised[0]) and "\n" not in str(raised[0])


@pytest.mark.parametrize("graceful", [True, False], ids=["stopped", "killed"])
def test_tail_waits_out_a_nats_restart_and_prints_every_event_once(
    private_nats_server: NatsServerHandle, graceful: bool
) -> None:
    """tail.py's promise behind docs/events.md, Consuming: NATS going away after the first
    connect is waited out, and the durable goes on after the last event it printed."""
    url, spec = private_nats_server.url, fresh_stream_spec()
    feed = MemoryFeed(make_events(5))
    publish_feed(url, spec, feed)
    out, counted = io.StringIO(), []
    reader = threading.Thread(target=lambda: counted.append(
        tail(url, f"{spec.subject_prefix}.>", "restarted", out, limit=10, stream=spec.name)),
        daemon=True)
    reader.start()
    wait_until(lambda: out.getvalue().count("\n") == 5, what="the first events printed")
    private_nats_server.stop(graceful=graceful)
    private_nats_server.start()
    feed.extend(make_events(5, start=6))
    publish_feed(url, spec, feed)
    reader.join(30)
    assert counted == [10]
    assert [json.loads(line)["position"] for line in out.getvalue().splitlines()] == list(
        range(1, 11))


# -- the relay's log while it keeps failing ----------------------------------------------------

TOO_SMALL = 1024  # a stream's max_msg_size the relay refuses: below an event's stand-in


def test_a_refusal_that_recurs_after_every_reconnect_is_warned_once(
    nats_server: NatsServerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/events.md, Operation: "each error is logged as a warning with its message, once
    while the relay keeps failing the same way (a retry failing again with the same message is
    logged at debug level)". Here the relay refuses the stream on every attempt (the operator
    gave it a `max_msg_size` too small for an event's stand-in): the relay connects fine each
    time and fails the same way, which must not turn into one warning per retry."""
    caplog.set_level(logging.DEBUG, logger="context_service.adapters.nats")
    spec = fresh_stream_spec()
    asyncio.run(_add_stream(nats_server.url,
                            dataclasses.replace(spec.config(), max_msg_size=TOO_SMALL)))
    events = make_events(3)
    relay = Relay(MemoryFeed(events), MemoryPositionStore(),
                  RelaySettings(url=nats_server.url, stream=spec, backoff_initial=0.01,
                                backoff_max=0.05))
    relay.start()
    try:
        wait_until(lambda: relay.stats.errors >= 5, what="repeated refusals")
    finally:
        relay.stop()
    assert positions_of(read_stream(nats_server.url, spec)) == []  # nothing skipped
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    refused = [w for w in warnings if f"max_msg_size of {TOO_SMALL} bytes" in w]
    assert len(refused) == 1, warnings
    assert not [w for w in warnings if w not in refused], warnings
    connected = [r.getMessage() for r in caplog.records
                 if r.levelno >= logging.INFO and "connected to" in r.getMessage()]
    assert len(connected) <= 1, connected  # not one line per retry either


def test_after_recovering_the_same_failure_is_warned_again(
    nats_server: NatsServerHandle, caplog: pytest.LogCaptureFixture
) -> None:
    """The other half of the same rule: once the relay published again, a later failure with
    the same message is a new episode and gets its warning (the operator must see it)."""
    caplog.set_level(logging.DEBUG, logger="context_service.adapters.nats")
    spec = fresh_stream_spec()
    asyncio.run(_add_stream(nats_server.url,
                            dataclasses.replace(spec.config(), max_msg_size=TOO_SMALL)))
    big = {"note": "x" * 2 * TOO_SMALL}  # refused mid-session: the next session meets the limit
    events = make_events(4)
    feed = MemoryFeed(events[:2])
    relay = Relay(feed, MemoryPositionStore(),
                  RelaySettings(url=nats_server.url, stream=spec, backoff_initial=0.01,
                                backoff_max=0.05))

    async def allow_large() -> None:
        nc = await nats.connect(nats_server.url)
        try:
            js = nc.jetstream()
            config = (await js.stream_info(spec.name)).config
            await js.update_stream(dataclasses.replace(config, max_msg_size=-1))
        finally:
            await nc.close()

    relay.start()
    try:
        wait_until(lambda: relay.stats.errors >= 3, what="first refusals")
        asyncio.run(allow_large())
        wait_until(lambda: relay.stats.last_position == 2, what="published once allowed")
        asyncio.run(_add_limit(nats_server.url, spec.name))
        feed.extend([msgspec.structs.replace(events[2], data=big), events[3]])
        errors = relay.stats.errors
        wait_until(lambda: relay.stats.errors >= errors + 3, what="second refusals")
    finally:
        relay.stop()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
                and f"max_msg_size of {TOO_SMALL} bytes" in r.getMessage()]
    assert len(warnings) == 2, warnings


async def _add_limit(url: str, name: str) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        config = (await js.stream_info(name)).config
        await js.update_stream(dataclasses.replace(config, max_msg_size=TOO_SMALL))
    finally:
        await nc.close()


# -- an event larger than the server's max_payload -------------------------------------------

SMALL_PAYLOAD = 8192
SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "event-envelope.schema.json")
                    .read_text())


@pytest.fixture
def small_payload_url(tmp_path: Path) -> Iterator[str]:
    """A nats-server an operator configured with a `max_payload` far below the default."""
    binary = find_binary()
    assert binary is not None, "nats-server binary not found"
    port, config = free_port(), tmp_path / "nats.conf"
    config.write_text(f'port: {port}\nhost: "127.0.0.1"\nmax_payload: {SMALL_PAYLOAD}\n'
                      f'jetstream {{ store_dir: "{tmp_path / "js"}" }}\n')
    proc = subprocess.Popen([str(binary), "-c", str(config)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: proc.poll() is None and probe("127.0.0.1", port) is not None,
                   what="nats-server ready")
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


class UnsavedCheckpoint(MemoryPositionStore):
    """A relay that dies each time before its checkpoint is written."""

    def save(self, position: int) -> None:
        return None


async def _purge(url: str, name: str) -> None:
    nc = await nats.connect(url)
    try:
        await nc.jetstream().purge_stream(name)
    finally:
        await nc.close()


def test_a_stand_in_is_a_valid_envelope_and_its_republish_carries_the_same_dedup_id(
    small_payload_url: str,
) -> None:
    """docs/events.md, Operation and Headers: an event the server's `max_payload` cannot hold
    is published as its envelope with `"data":{}` and `Cs-Data-Omitted: too-large`, same
    position, subject and ids (so it validates against docs/event-envelope.schema.json like any
    other). Delivery guarantees: a relay that dies before its checkpoint and finds the stream
    unable to tell its end republishes under the same `Nats-Msg-Id`, the stand-in included, and
    JetStream drops every copy."""
    url, spec = small_payload_url, fresh_stream_spec()
    events = make_events(4)
    events[1] = msgspec.structs.replace(events[1], namespace="team.b *x", data={
        "note": "x" * (2 * SMALL_PAYLOAD)})
    feed = MemoryFeed(events)
    first = Relay(feed, UnsavedCheckpoint(), RelaySettings(url=url, stream=spec,
                                                           backoff_initial=0.01))
    first.start()
    wait_until(lambda: first.stats.last_position == 4, what="published, the large one too")
    first.kill()
    messages = read_stream(url, spec)
    assert positions_of(messages) == [1, 2, 3, 4]
    validator = Draft202012Validator(SCHEMA)
    for message, event in zip(messages, events, strict=True):
        validator.validate(message.json)
        assert message.subject == subject_for(event.namespace, event.aggregate, event.name,
                                              spec.subject_prefix)
        assert message.headers["Nats-Msg-Id"] == str(event.position)
    assert messages[1].headers["Cs-Data-Omitted"] == "too-large"
    assert messages[1].json == {**json.loads(encode(events[1])), "data": {}}
    assert [m for m in messages if "Cs-Data-Omitted" in m.headers] == [messages[1]]

    asyncio.run(_purge(url, spec.name))  # the stream can no longer tell where it ends
    second = Relay(feed, MemoryPositionStore(), RelaySettings(url=url, stream=spec,
                                                              backoff_initial=0.01))
    second.start()
    try:
        wait_until(lambda: second.stats.last_position == 4, what="republished")
    finally:
        second.stop()
    assert (second.stats.published, second.stats.duplicates) == (0, 4)
    assert read_stream(url, spec) == []


# -- history export and verify -----------------------------------------------------------------


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.postgres
def test_verify_names_every_kind_of_change_to_an_exported_file(
    idle_container: Container, tmp_path: Path
) -> None:
    """operations.md and the export's contract: `history verify` names the first broken line of
    a file whose lines were changed, reordered, repeated, dropped or cut short, and with the
    last hash export printed it also catches a file cut between lines or rewritten whole (every
    hash recomputed), which the chain alone cannot show."""
    write_history(idle_container.contexts, seed=19, steps=40)
    path = tmp_path / "log.jsonl"
    with path.open("wb") as out:
        count, last = export(idle_container.store, out)
    assert count == idle_container.store.head() >= 8
    lines = _lines(path)
    assert verify_file(path, last) == (count, None, "ok")

    def broken(rows: list[bytes], anchored: bool = False) -> int | None:
        return verify(iter(rows), terminated=True, last=last if anchored else None)[1]

    swapped = [*lines[:3], lines[4], lines[3], *lines[5:]]
    assert broken(swapped) == 4
    assert broken([*lines[:5], lines[4], *lines[5:]]) == 6  # line 5 twice
    assert broken(lines[1:]) == 1  # the first line dropped
    assert broken([*lines[:2], *lines[3:]]) == 3  # a middle line dropped
    assert broken([*lines[:-1], lines[-1][:-10]]) == count  # cut inside the last line
    assert broken(lines[:-1]) is None  # cut between lines: only the last hash shows it
    assert broken(lines[:-1], anchored=True) == count
    assert broken([*lines, lines[-1]], anchored=True) == count + 1

    # one value changed and every hash after it recomputed: a consistent chain, not the export
    rewritten, prev = [], "0" * 64
    for number, raw in enumerate(lines, start=1):
        entry = json.loads(raw)
        if number == 2:
            entry["actor"] = "user:mallory"
        entry["prevHash"] = prev
        entry.pop("hash")
        entry["hash"] = prev = hashlib.sha256(
            prev.encode() + msgspec.json.Encoder(order="sorted").encode(entry)).hexdigest()
        rewritten.append(msgspec.json.encode(entry) + b"\n")
    assert broken(rewritten) is None
    assert broken(rewritten, anchored=True) == count + 1
