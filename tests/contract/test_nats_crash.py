"""A relay that dies mid-stream and restarts loses nothing and, with the stream intact, repeats
nothing: killed as a task (thread) and as a process (SIGKILL)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.stream import StreamSpec
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore
from tests.support.nats_fixtures import (
    FilePositionStore,
    NatsServerHandle,
    make_events,
    positions_of,
    read_stream,
    wait_until,
)

pytestmark = pytest.mark.nats

TOTAL = 3000


def test_killed_relay_restarts_without_gaps_or_repeats(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    feed = MemoryFeed(make_events(TOTAL))
    store = MemoryPositionStore()
    # Slow, and checkpointing only when caught up: the kill lands mid-stream, checkpoint behind.
    slow = RelaySettings(
        url=nats_server.url,
        stream=nats_stream,
        batch_size=20,
        max_in_flight=8,
        save_every=10**9,
        save_interval=60.0,
    )
    first = Relay(feed, store, slow)
    first.start()
    wait_until(lambda: first.stats.last_position >= TOTAL // 3, what="a third published")
    first.kill()
    assert first.stats.last_position < TOTAL, "killed too late to be mid-stream"
    assert store.load() < first.stats.last_position
    second = Relay(feed, store, RelaySettings(url=nats_server.url, stream=nats_stream))
    second.start()
    try:
        wait_until(lambda: second.stats.last_position == TOTAL, what="all published")
    finally:
        second.stop()
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(1, TOTAL + 1))
    assert second.stats.duplicates == 0  # resumed at the stream's end, not at the checkpoint
    # What was in flight at the kill and stored anyway is not sent again.
    assert second.stats.published <= TOTAL - first.stats.published
    assert store.load() == TOTAL


def test_republish_beyond_what_the_stream_shows_is_deduplicated(
    nats_server: NatsServerHandle, nats_stream: StreamSpec
) -> None:
    feed = MemoryFeed(make_events(300))
    settings = RelaySettings(url=nats_server.url, stream=nats_stream)
    first = Relay(feed, MemoryPositionStore(), settings)
    first.start()
    wait_until(lambda: first.stats.last_position == 300)
    first.stop()
    asyncio.run(_purge(nats_server.url, nats_stream.name))  # the stream can no longer tell its end
    feed.extend(make_events(100, start=301))
    second = Relay(feed, MemoryPositionStore(), settings)  # and the checkpoint was lost too
    second.start()
    try:
        wait_until(lambda: second.stats.last_position == 400)
    finally:
        second.stop()
    assert (second.stats.duplicates, second.stats.published) == (300, 100)
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(301, 401))


async def _purge(url: str, stream: str) -> None:
    import nats

    nc = await nats.connect(url)
    try:
        await nc.jetstream().purge_stream(stream)
    finally:
        await nc.close()


def test_sigkilled_relay_process_restarts_without_gaps(
    nats_server: NatsServerHandle, nats_stream: StreamSpec, tmp_path: Path
) -> None:
    checkpoint = tmp_path / "relay.position"
    root = Path(__file__).resolve().parents[2]
    command = [
        sys.executable,
        "-c",
        "from tests.support.nats_fixtures import relay_child; relay_child()",
        nats_server.url,
        nats_stream.name,
        nats_stream.subject_prefix,
        str(checkpoint),
        str(TOTAL),
        "3000",
    ]
    env = {**os.environ, "PYTHONPATH": str(root)}
    child = subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE)
    try:
        wait_until(lambda: FilePositionStore(checkpoint).load() >= TOTAL // 3, what="progress")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
        assert child.stdout is not None
        child.stdout.close()
    killed_at = FilePositionStore(checkpoint).load()
    assert killed_at < TOTAL, "killed too late to be mid-stream"
    again = subprocess.run(command, cwd=root, env=env, capture_output=True, timeout=60)
    assert again.returncode == 0, again.stderr.decode()
    counts = json.loads(again.stdout.decode().strip().splitlines()[-1])
    assert counts["duplicates"] == 0
    assert positions_of(read_stream(nats_server.url, nats_stream)) == list(range(1, TOTAL + 1))
    assert FilePositionStore(checkpoint).load() == TOTAL
