"""``context-service events tail``: a durable JetStream consumer that prints events as they arrive.

It is also the reference subscriber: a pull consumer with explicit acks, so a restart with the same
``--durable`` name continues after the last event it printed. Output is one JSON envelope per line
(``json``) or one readable line per event (``text``); a message in the stream that is not an
envelope (another publisher's) is noted on stderr and passed over. Ctrl-C stops it cleanly,
handing back what it fetched but did not print, and reaches the caller as ``KeyboardInterrupt``.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from dataclasses import dataclass
from typing import Any, TextIO

import msgspec
import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api
from nats.js.errors import APIError, NotFoundError

from context_service.adapters.nats.envelope import SUBJECT_PREFIX, decode
from context_service.adapters.nats.stream import STREAM_NAME, covers
from context_service.urls import redacted, servers

DEFAULT_DURABLE = "context-service-tail"


class TailError(RuntimeError):
    """NATS unreachable, the stream missing, or a subject outside the stream."""


@dataclass
class _Progress:
    printed: int = 0


def tail(
    url: str,
    subject: str = f"{SUBJECT_PREFIX}.>",
    durable: str = DEFAULT_DURABLE,
    out: TextIO = sys.stdout,
    limit: int | None = None,
    *,
    stream: str = STREAM_NAME,
    fmt: str = "json",
    connect_wait: float = 10.0,
) -> int:
    """Print events matching ``subject`` until ``limit`` (if any) or Ctrl-C; return the count."""
    if fmt not in ("json", "text"):
        raise ValueError("fmt must be 'json' or 'text'")
    progress = _Progress()
    with contextlib.suppress(BrokenPipeError):  # `| head`; Ctrl-C is the caller's (exit 130)
        asyncio.run(
            tail_async(url, subject, durable, out, limit, stream, fmt, connect_wait, progress)
        )
    return progress.printed


async def tail_async(
    url: str,
    subject: str,
    durable: str,
    out: TextIO,
    limit: int | None,
    stream: str = STREAM_NAME,
    fmt: str = "json",
    connect_wait: float = 10.0,
    progress: _Progress | None = None,
) -> int:
    """The loop behind ``tail``; NATS outages after the first connect are waited out."""
    progress = progress or _Progress()
    nc = await _connect(url, connect_wait)
    try:
        js = nc.jetstream()
        sub = await _subscribe(js, stream, subject, durable)
        while limit is None or progress.printed < limit:
            want = 256 if limit is None else min(256, limit - progress.printed)
            await _print_batch(await _fetch(sub, want), out, fmt, progress)
        await nc.flush()
    finally:
        with contextlib.suppress(Exception):
            await nc.close()
    return progress.printed


async def _connect(url: str, connect_wait: float) -> Client:
    nc = Client()

    async def quiet(_: Exception) -> None:
        return None

    try:
        await asyncio.wait_for(
            nc.connect(
                servers=servers(url),
                name="context-service-tail",
                max_reconnect_attempts=-1,
                reconnect_time_wait=1,
                error_cb=quiet,
            ),
            connect_wait,
        )
    except (TimeoutError, OSError, nats.errors.Error) as exc:
        with contextlib.suppress(Exception):
            await nc.close()
        raise TailError(
            f"cannot reach NATS at {redacted(url)} within {connect_wait}s") from exc
    return nc


async def _subscribe(
    js: JetStreamContext, stream: str, subject: str, durable: str
) -> JetStreamContext.PullSubscription:
    """Create or update the durable consumer (its filter follows ``subject``) and bind to it."""
    try:
        info = await js.stream_info(stream)
    except NotFoundError as exc:
        raise TailError(f"stream {stream} not found (has the relay run yet?)") from exc
    if not any(covers(pattern, subject) for pattern in info.config.subjects or []):
        raise TailError(f"cannot consume {subject!r} from stream {stream}: outside its subjects")
    config = api.ConsumerConfig(
        name=durable,
        durable_name=durable,
        filter_subject=subject,
        ack_policy=api.AckPolicy.EXPLICIT,
        deliver_policy=api.DeliverPolicy.ALL,
        ack_wait=30.0,
        max_ack_pending=1024,
    )
    try:
        await js.add_consumer(stream, config)
    except APIError as exc:
        raise TailError(f"cannot consume {subject!r} from stream {stream}: {exc}") from exc
    return await js.pull_subscribe_bind(durable=durable, stream=stream)


async def _print_batch(batch: list[Msg], out: TextIO, fmt: str, progress: _Progress) -> None:
    """Print and acknowledge each message in turn (explicit acks: only what was printed).

    Stopped part-way (Ctrl-C, a closed pipe), the fetched messages not printed yet are handed back
    at once, in order: otherwise the server holds them until their ack wait runs out and the next
    run of the same durable prints later events before them.
    """
    done = 0
    try:
        for msg in batch:
            line = _render(msg, fmt)
            if line is None:
                _pass_over(msg)
            else:
                out.write(line + "\n")
                out.flush()
                progress.printed += 1
            done += 1
            await msg.ack()
    except BaseException:
        for msg in batch[done:]:
            with contextlib.suppress(Exception):
                await msg.nak()
        raise


def _pass_over(msg: Msg) -> None:
    """Another publisher's message in the stream: noted on stderr, acknowledged, not printed
    (standard output holds envelopes only, and ``--limit`` counts events)."""
    seq = msg.metadata.sequence.stream
    print(f"events tail: message {seq} on {msg.subject} is not an event envelope; passed over",
          file=sys.stderr)


async def _fetch(sub: JetStreamContext.PullSubscription, want: int) -> list[Msg]:
    try:
        return await sub.fetch(want, timeout=1.0)
    except nats.errors.TimeoutError:
        return []
    except (nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError):
        await asyncio.sleep(0.5)  # NATS is away; the client reconnects on its own
        return []


def _render(msg: Msg, fmt: str) -> str | None:
    """The line to print for ``msg``; ``None`` when it is not an event envelope."""
    try:
        decode(msg.data)  # the envelope's keys, with their types
        event: dict[str, Any] = msgspec.json.decode(msg.data)  # ...and any key added since
    except msgspec.DecodeError:  # ValidationError too
        return None
    if fmt == "json":
        text = msg.data.decode()
        # one envelope per line, whatever the publisher's layout
        return msgspec.json.encode(event).decode() if "\n" in text or "\r" in text else text
    data = msgspec.json.encode(event.get("data")).decode()
    return (
        f"#{event.get('position')} {event.get('timestamp')} "
        f"{event.get('namespace') or '-'}/{event.get('aggregate')}/{event.get('aggregateId')}"
        f"@{event.get('version')} {event.get('name')} by {event.get('actor') or '-'} {data}"
    )
