"""Relay catch-up rate against raw async JetStream publishing of the same messages, same run.

    python bench/bench_relay.py [--events 100000] [--rounds 2] [--url nats://...]

Both sides publish the same subjects, payloads and ``Nats-Msg-Id`` headers into a fresh stream and
wait for every ack; the relay additionally reads an in-memory feed, encodes envelopes, keeps
order and checkpoints. Without ``--url`` an embedded nats-server is started in a temporary
directory. Goal: relay / raw >= 0.5.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import tempfile
import time
import uuid
from collections import deque
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import nats
from nats.js import api

from context_service.adapters.nats.envelope import Envelope, encode, subject_of
from context_service.adapters.nats.relay import Relay, RelaySettings
from context_service.adapters.nats.server import EmbeddedNatsServer
from context_service.adapters.nats.stream import StreamSpec, ensure_stream
from context_service.projections.outbox import MemoryFeed, MemoryPositionStore

NAMES = ("ContextCreated", "AccessGranted", "RevisionPublished", "ConsumerAttached")


def make_events(count: int) -> list[Envelope]:
    base = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        Envelope(
            position=i,
            event_id=str(uuid.uuid4()),
            name=NAMES[i % len(NAMES)],
            aggregate="context",
            aggregate_id=str(uuid.UUID(int=i % 1000)),
            version=i // 1000 + 1,
            timestamp=base + timedelta(milliseconds=i),
            namespace=f"team-{i % 10}",
            actor="user:alice",
            data={"name": f"ctx-{i % 1000}", "revision": i, "digest": "sha256:" + "ab" * 32},
        )
        for i in range(1, count + 1)
    ]


async def raw_publish(url: str, spec: StreamSpec, events: list[Envelope], window: int) -> float:
    """Events/s of plain ``publish_async`` with at most ``window`` unacknowledged messages."""
    messages = [
        (subject_of(e, spec.subject_prefix), encode(e), {"Nats-Msg-Id": str(e.position)})
        for e in events
    ]
    nc = await nats.connect(url)
    try:
        js = nc.jetstream(publish_async_max_pending=window + 1)
        await ensure_stream(js, spec)
        pending: deque[asyncio.Future[api.PubAck]] = deque()
        started = time.perf_counter()
        for subject, payload, headers in messages:
            if len(pending) >= window:
                await pending.popleft()
            pending.append(await js.publish_async(subject, payload, headers=headers))
        while pending:
            await pending.popleft()
        elapsed = time.perf_counter() - started
        await js.delete_stream(spec.name)
    finally:
        await nc.close()
    return len(events) / elapsed


async def relay_catch_up(url: str, spec: StreamSpec, events: list[Envelope], window: int) -> float:
    """Events/s of the relay draining an in-memory feed of ``events`` (connect included)."""
    relay = Relay(
        MemoryFeed(events),
        MemoryPositionStore(),
        RelaySettings(url=url, stream=spec, max_in_flight=window),
    )
    started = time.perf_counter()
    task = asyncio.create_task(relay.run())
    while relay.stats.last_position < len(events):
        if task.done():
            task.result()
        await asyncio.sleep(0.005)
    elapsed = time.perf_counter() - started
    relay.request_stop()
    await task
    nc = await nats.connect(url)
    try:
        info = await nc.jetstream().stream_info(spec.name)
        assert info.state.messages == len(events), info.state
        await nc.jetstream().delete_stream(spec.name)
    finally:
        await nc.close()
    return len(events) / elapsed


def spec_for(label: str) -> StreamSpec:
    tag = uuid.uuid4().hex[:8]
    return StreamSpec(name=f"BENCH_{label}_{tag}", subject_prefix=f"bench{tag}.events")


async def bench(url: str, count: int, rounds: int, window: int) -> None:
    events = make_events(count)
    size = sum(len(encode(e)) for e in events[:1000]) / min(1000, count)
    print(f"{count} events, ~{size:.0f} B payload, window {window}, {rounds} round(s)")
    raw: list[float] = []
    relayed: list[float] = []
    for number in range(1, rounds + 1):
        raw.append(await raw_publish(url, spec_for("RAW"), events, window))
        relayed.append(await relay_catch_up(url, spec_for("RELAY"), events, window))
        print(f"round {number}: raw {raw[-1]:,.0f} ev/s  relay {relayed[-1]:,.0f} ev/s")
    best_raw, best_relay = max(raw), max(relayed)
    print(f"raw JetStream publish_async: {best_raw:,.0f} events/s (best)")
    print(f"relay catch-up:              {best_relay:,.0f} events/s (best)")
    ratio = statistics.median(r / b for r, b in zip(relayed, raw, strict=True))
    print(f"ratio relay/raw: {best_relay / best_raw:.2f} (best/best), {ratio:.2f} (median/round)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--window", type=int, default=1024, help="max unacknowledged messages")
    parser.add_argument("--url", help="use this NATS server instead of an embedded one")
    args = parser.parse_args()
    if args.url:
        asyncio.run(bench(args.url, args.events, args.rounds, args.window))
        return
    with tempfile.TemporaryDirectory(prefix="bench-nats-") as tmp:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = EmbeddedNatsServer(Path(tmp), f"127.0.0.1:{port}")
        with server:
            asyncio.run(bench(server.url, args.events, args.rounds, args.window))


if __name__ == "__main__":
    main()
