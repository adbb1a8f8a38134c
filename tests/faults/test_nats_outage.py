"""nats-server killed for a while under write load, with the relay on the real event log: the
relay waits, reconnects and publishes every stored event exactly once, in log order."""

from __future__ import annotations

import threading
import time

import pytest

from context_service.adapters.eventstore.outbox import LogFeed, TrackedPosition
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.bootstrap import Container
from context_service.domain.context.commands import CreateContext, GrantAccess
from context_service.domain.errors import DomainError
from context_service.domain.events import Subject
from tests.support.nats_fixtures import (
    NatsServerHandle,
    fresh_stream_spec,
    positions_of,
    read_stream,
    wait_until,
)

pytestmark = [pytest.mark.nats, pytest.mark.postgres, pytest.mark.slow]
OWNER = Subject("user", "owner")


def _writers(container: Container, stop: threading.Event, count: int = 8) -> list[threading.Thread]:
    """Writers of new contexts and of grants on a shared one."""

    def write(worker: int) -> None:
        for i in range(100_000):
            if stop.is_set():
                return
            name = f"w{worker}-{i}"
            try:
                container.contexts.execute("ns", name, CreateContext(
                    actor=OWNER, name=name, namespace="ns", type="memory", backend="pvc",
                    size="1Gi", access_mode="ReadWriteOnce"))
                container.contexts.execute("ns", "shared", GrantAccess(
                    actor=OWNER, subject=Subject("agent", name), permissions=("read",)))
            except DomainError:
                pass
            time.sleep(0.002)

    threads = [threading.Thread(target=write, args=(w,), daemon=True) for w in range(count)]
    for thread in threads:
        thread.start()
    return threads


def test_relay_survives_a_nats_outage_under_load(idle_container: Container,
                                                 private_nats_server: NatsServerHandle) -> None:
    container = idle_container
    container.contexts.execute("ns", "shared", CreateContext(
        actor=OWNER, name="shared", namespace="ns", type="memory", backend="pvc", size="1Gi",
        access_mode="ReadWriteOnce"))
    spec = fresh_stream_spec()
    checkpoint = TrackedPosition(container.tracking, "relay")
    relay = Relay(LogFeed(container.store), checkpoint, RelaySettings(
        url=private_nats_server.url, stream=spec, backoff_initial=0.05, backoff_max=0.5))
    stop = threading.Event()
    writers = _writers(container, stop)
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position >= 200, what="publishing under way")
        private_nats_server.stop(graceful=False)
        wait_until(lambda: not relay.stats.connected, what="the relay to notice")
        during, noticed = container.store.head(), relay.stats.errors
        # writes go on while NATS is away and the relay keeps failing: a few hundred events and
        # three more failed attempts, counted rather than waited for
        wait_until(lambda: container.store.head() >= during + 300
                   and relay.stats.errors >= noticed + 3, what="writes during the outage")
        assert container.store.head() > during, "the log should grow during the outage"
        private_nats_server.start()
        # and go on while the relay reconnects and catches up
        wait_until(lambda: relay.stats.connected, what="the relay to reconnect")
        resumed = container.store.head()
        wait_until(lambda: container.store.head() >= resumed + 100, what="writes after it")
        stop.set()
        for thread in writers:
            thread.join(30)
        head = container.store.head()
        wait_until(lambda: relay.stats.last_position >= head, timeout=30, what="catch-up")
    finally:
        stop.set()
        relay.stop()
    logged = []
    after = 0
    while batch := container.store.read(after, 5000):
        logged += [r.position for r in batch]
        after = batch[-1].position
    published = positions_of(read_stream(private_nats_server.url, spec))
    assert len(published) == len(set(published)), "a position was published twice"
    assert published == logged, "the stream and the log differ"
    assert checkpoint.load() == head
