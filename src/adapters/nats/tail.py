"""``context-service events tail``: a durable JetStream consumer that prints events as they arrive.

It is also the reference subscriber: a pull consumer with explicit acks, so a restart with the same
``--durable`` name continues after the last event it printed. Output is one JSON envelope per line
(``json``) or one readable line per event (``text``). Ctrl-C stops it cleanly.
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

from context_service.adapters.nats.envelope import SUBJECT_PREFIX
from context_service.adapters.nats.stream import STREAM_NAME
from context_service.urls import redacted

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
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):  # Ctrl-C, or `| head`
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
            for msg in await _fetch(sub, want):
                out.write(_render(msg, fmt) + "\n")
                out.flush()
                await msg.ack()  # explicit: only what was printed is acknowledged
                progress.printed += 1
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
                servers=[url],
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
    if not any(_covers(pattern, subject) for pattern in info.config.subjects or []):
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


def _covers(pattern: str, subject: str) -> bool:
    """Whether every subject matching ``subject`` also matches the stream's ``pattern``."""
    wanted = subject.split(".")
    for index, token in enumerate(pattern.split(".")):
        if token == ">":
            return len(wanted) > index
        if index >= len(wanted) or wanted[index] == ">":
            return False
        if token != "*" and wanted[index] != token:
            return False
    return len(wanted) == len(pattern.split("."))


async def _fetch(sub: JetStreamContext.PullSubscription, want: int) -> list[Msg]:
    try:
        return await sub.fetch(want, timeout=1.0)
    except nats.errors.TimeoutError:
        return []
    except (nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError):
        await asyncio.sleep(0.5)  # NATS is away; the client reconnects on its own
        return []


def _render(msg: Msg, fmt: str) -> str:
    text = msg.data.decode("utf-8", errors="replace")
    if fmt == "json":
        return text
    try:
        event: dict[str, Any] = msgspec.json.decode(msg.data)
    except msgspec.DecodeError:
        return f"{msg.subject} {text}"
    data = msgspec.json.encode(event.get("data")).decode()
    return (
        f"#{event.get('position')} {event.get('timestamp')} "
        f"{event.get('namespace') or '-'}/{event.get('aggregate')}/{event.get('aggregateId')}"
        f"@{event.get('version')} {event.get('name')} by {event.get('actor') or '-'} {data}"
    )
