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
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
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
REMEMBERED = 4096  # stream sequences a tail remembers handling: four times its acks pending


class TailError(RuntimeError):
    """NATS unreachable, the stream missing, or a subject outside the stream."""


@dataclass
class _Progress:
    """What this tail printed: a count, and the stream sequences of the latest messages it
    handled (``REMEMBERED`` of them), so one redelivered because NATS lost its ack (a server
    killed before it wrote the ack down) is acknowledged again, not printed twice."""

    printed: int = 0
    handled: OrderedDict[int, None] = field(default_factory=OrderedDict)

    def seen(self, msg: Msg) -> bool:
        """Whether ``msg`` was handled before."""
        return msg.metadata.sequence.stream in self.handled

    def remember(self, msg: Msg) -> None:
        """Note ``msg`` as handled, once printed or passed over: one handed back unprinted (a
        write interrupted) is printed when it comes again."""
        self.handled[msg.metadata.sequence.stream] = None
        if len(self.handled) > REMEMBERED:
            self.handled.popitem(last=False)


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
    events: str | None = None,
) -> int:
    """Print events matching ``subject`` until ``limit`` (if any) or Ctrl-C; return the count.

    ``events`` is the subject the relay publishes on (``context.events.>`` for the service's
    stream, by default); ``subject`` must lie within it and within the stream's subjects.
    """
    if fmt not in ("json", "text"):
        raise ValueError("fmt must be 'json' or 'text'")
    progress = _Progress()
    with contextlib.suppress(BrokenPipeError):  # `| head`; Ctrl-C is the caller's (exit 130)
        asyncio.run(
            tail_async(url, subject, durable, out, limit, stream, fmt, connect_wait, progress,
                       events)
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
    events: str | None = None,
) -> int:
    """The loop behind ``tail``; NATS outages after the first connect are waited out."""
    progress = progress or _Progress()
    _check_within_events(subject, stream, events)
    nc = await _connect(url, connect_wait)
    try:
        js = nc.jetstream()
        sub = await _subscribe(js, stream, subject, durable)
        while limit is None or progress.printed < limit:
            want = 256 if limit is None else min(256, limit - progress.printed)
            await _print_batch(await _fetch(js, sub, want, stream, durable), out, fmt, progress)
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


def _check_within_events(subject: str, stream: str, events: str | None) -> None:
    """Refuse a subject outside the events: an operator may give the service's stream wider
    subjects (``context.>``, ``audit.>`` beside it), whose other messages are not events. A
    stream of another name carries events where its caller says (``events``), if it says."""
    if events is None and stream == STREAM_NAME:
        events = f"{SUBJECT_PREFIX}.>"
    if events is not None and not covers(events, subject):
        raise TailError(f"cannot consume {subject!r}: outside the events ({events})")


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
            if progress.seen(msg):
                pass  # handled already, its ack lost: acknowledged again below, not printed
            elif (line := _render(msg, fmt)) is None:
                _pass_over(msg)
            else:
                out.write(line + "\n")
                out.flush()
                progress.printed += 1
            progress.remember(msg)
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


async def _fetch(js: JetStreamContext, sub: JetStreamContext.PullSubscription, want: int,
                 stream: str, durable: str) -> list[Msg]:
    try:
        return await sub.fetch(want, timeout=1.0)
    except nats.errors.TimeoutError:
        return []
    except (nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError):
        await asyncio.sleep(0.5)  # NATS is away; the client reconnects on its own
        return []
    except APIError:  # no responder for the consumer: gone for good, or JetStream not back yet
        await _still_there(js, stream, durable)
        await asyncio.sleep(0.5)
        return []


async def _still_there(js: JetStreamContext, stream: str, durable: str) -> None:
    """Raise ``TailError`` when the stream or the durable was deleted under the tail (a new
    durable would start over from the first event); any other answer is waited out."""
    try:
        await js.consumer_info(stream, durable)
    except NotFoundError as exc:
        raise TailError(f"stream {stream} or its consumer {durable} was deleted while "
                        f"following it: {exc.description or exc}") from exc
    except (nats.errors.Error, TimeoutError):
        return


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
        if "\n" in text or "\r" in text:
            text = msgspec.json.encode(event).decode()
        # raw in a valid JSON text only inside strings, where the escape is the same value
        return _RAW_IN_JSON.sub(_escaped, text)
    data = msgspec.json.encode(event.get("data")).decode()
    line = (
        f"#{event.get('position')} {event.get('timestamp')} "
        f"{event.get('namespace') or '-'}/{event.get('aggregate')}/{event.get('aggregateId')}"
        f"@{event.get('version')} {event.get('name')} by {event.get('actor') or '-'} {data}"
    )
    return _UNREADABLE.sub(_escaped, line)


# What would break a readable line (line breaks, U+2028 and U+2029 included) or reach the
# terminal as a control sequence: written as a JSON escape, so one event stays one line. The
# envelope's strings are the publisher's; `data` is JSON already, where such an escape is valid.
_UNREADABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
# Of those, what a valid JSON text may hold raw (in a string): C1 controls, U+0085 (NEL) among
# them, and the line and paragraph separators, line breaks to terminals, log viewers and
# str.splitlines alike.
_RAW_IN_JSON = re.compile(r"[\x7f-\x9f\u2028\u2029]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"
