"""Edges of the relay: credentials in the NATS URL never reach a log line or an error message, and
an event larger than the server's ``max_payload`` does not stop the relay at it for good."""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from msgspec.structs import replace

from context_service.adapters.nats.envelope import decode
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.server import find_binary, probe
from context_service.adapters.nats.stream import StreamSpec
from context_service.adapters.nats.tail import TailError, tail
from context_service.adapters.nats.worker import RelayWorker
from context_service.config import Settings
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore, OutboxEvent
from tests.support.nats_fixtures import (
    NatsServerHandle,
    free_port,
    fresh_stream_spec,
    make_events,
    positions_of,
    read_stream,
    wait_until,
)

pytestmark = pytest.mark.nats
SECRET = "pa55-w0rd-never-logged"


def _with_credentials(url: str) -> str:
    return url.replace("nats://", f"nats://relay:{SECRET}@", 1)


def _logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every captured line with its structured fields, as the JSON formatter would write it."""
    return "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)


class OnceFailingFeed(MemoryFeed):
    """A feed whose first read fails: the relay reconnects and says where to."""

    failed = False

    def read(self, after: int, limit: int) -> Sequence[OutboxEvent]:
        if not self.failed:
            self.failed = True
            raise ConnectionError("event store unavailable")
        return super().read(after, limit)


def test_credentials_in_the_nats_url_never_reach_the_log(
        nats_server: NatsServerHandle, nats_stream: StreamSpec,
        caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.DEBUG)
    url = _with_credentials(nats_server.url)  # a server without auth accepts any credentials
    settings = Settings(data_dir=tmp_path, nats_url=url, kube_mode="off")
    feed, positions = OnceFailingFeed(make_events(5)), MemoryPositionStore()
    worker = RelayWorker(settings, feed, positions)
    # the worker's own relay, on this test's stream
    worker.relay = Relay(feed, positions,
                         RelaySettings(url=worker.url, stream=nats_stream, backoff_initial=0.01))
    worker.start()
    try:
        wait_until(lambda: worker.relay.stats.last_position == 5, what="published")
    finally:
        worker.stop()
    assert worker.relay.stats.errors == 1  # it failed once, then connected again
    logged = _logged(caplog)
    assert "connected to" in logged and "publishing to JetStream" in logged
    assert SECRET not in logged
    assert "127.0.0.1" in logged  # the address is still there to read


def test_credentials_in_the_nats_url_never_reach_an_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"nats://relay:{SECRET}@127.0.0.1:{free_port()}"
    with pytest.raises(TailError) as raised:
        tail(url, limit=1, connect_wait=0.5)
    assert "cannot reach NATS" in str(raised.value)
    assert SECRET not in str(raised.value) and SECRET not in _logged(caplog)

    spec = fresh_stream_spec()
    relay = Relay(MemoryFeed(make_events(1)), MemoryPositionStore(),
                  RelaySettings(url=url, stream=spec, backoff_initial=0.01))
    relay.start()
    try:
        wait_until(lambda: relay.stats.errors >= 2, what="connection attempts")
    finally:
        relay.stop()
    assert SECRET not in (relay.stats.last_error or "") and SECRET not in _logged(caplog)


# -- an event too large for the server ---------------------------------------------------------

MAX_PAYLOAD = 8192


@pytest.fixture
def small_payload_server(tmp_path: Path) -> Iterator[str]:
    """A nats-server whose ``max_payload`` is far below the default (an operator's choice)."""
    binary = find_binary()
    assert binary is not None, "nats-server binary not found"
    port = free_port()
    config = tmp_path / "nats.conf"
    config.write_text(f'port: {port}\nhost: "127.0.0.1"\nmax_payload: {MAX_PAYLOAD}\n'
                      f'jetstream {{ store_dir: "{tmp_path / "js"}" }}\n')
    proc = subprocess.Popen([str(binary), "-c", str(config)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 15
        while probe("127.0.0.1", port, timeout=0.5) is None:
            assert proc.poll() is None and time.monotonic() < deadline, "nats-server not ready"
            time.sleep(0.05)
        yield f"nats://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_event_larger_than_max_payload_is_published_without_its_data(
        small_payload_server: str) -> None:
    events = make_events(4)
    events[1] = replace(events[1], data={"note": "x" * (3 * MAX_PAYLOAD)})
    spec = fresh_stream_spec()
    store = MemoryPositionStore()
    relay = Relay(MemoryFeed(events), store,
                  RelaySettings(url=small_payload_server, stream=spec, backoff_initial=0.01))
    relay.start()
    try:
        wait_until(lambda: relay.stats.last_position == 4, timeout=10,
                   what="the relay went past the large event")
    finally:
        relay.stop()
    messages = read_stream(small_payload_server, spec)
    assert positions_of(messages) == [1, 2, 3, 4]
    large = messages[1]
    assert large.headers["Cs-Data-Omitted"] == "too-large"
    envelope = decode(large.payload)
    assert envelope == replace(events[1], data={})  # everything but the data, as it is
    assert [decode(m.payload) for i, m in enumerate(messages) if i != 1] == [
        e for i, e in enumerate(events) if i != 1]
    assert "Cs-Data-Omitted" not in messages[0].headers
    assert store.load() == 4
