"""Event-to-subscriber latency under a steady write rate: from sending a write to receiving
its event from JetStream (a push subscriber on the stream), with the relay in the service.

    python -m bench.bench_event_latency [--rate 200] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time

import httpx
import nats

from bench.harness import paced_creates, percentile, postgres, served
from tests.e2e.server import free_port


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    listen = f"127.0.0.1:{free_port()}"
    sent: dict[int, float] = {}
    arrived: dict[int, float] = {}
    lock = threading.Lock()
    total = int(args.rate * args.seconds)
    with postgres() as (url, data), served(url, data, workers="projections,relay",
                                           env={"CS_NATS_LISTEN": listen}) as server:
        ready = threading.Event()

        async def subscribe() -> None:
            nc = await nats.connect(f"nats://{listen}")
            js = nc.jetstream()

            async def on_message(msg: nats.aio.msg.Msg) -> None:
                position = int((msg.headers or {})["Nats-Msg-Id"])
                with lock:
                    arrived[position] = time.perf_counter()

            await js.subscribe("context.events.>", cb=on_message, ordered_consumer=True,
                               deliver_policy=nats.js.api.DeliverPolicy.NEW)
            ready.set()
            while len(arrived) < total:
                await asyncio.sleep(0.05)
            await nc.close()

        sub = threading.Thread(target=lambda: asyncio.run(subscribe()))
        sub.start()
        ready.wait(30)
        def on_write(_i: int, sent_at: float, r: httpx.Response, _http: httpx.Client) -> None:
            with lock:
                sent[int(r.headers["x-context-position"])] = sent_at

        achieved = paced_creates(server.url, args.rate, args.seconds, "lat", on_write)
        sub.join(60)
    ms = [(arrived[p] - sent[p]) * 1000 for p in sent if p in arrived]
    print(f"writes: {total} at {achieved:.0f}/s; events received: {len(ms)}")
    print(f"write sent -> event received: p50 {percentile(ms, 50):.1f} ms, "
          f"p99 {percentile(ms, 99):.1f} ms, max {max(ms):.1f} ms")


if __name__ == "__main__":
    main()
