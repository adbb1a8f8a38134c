"""The outbox relay: publishes every stored event, in log order, to JetStream, at least once.

Order: messages are pipelined (bounded in flight, acks settled in order); from the first message
a session has stored on, each carries ``Nats-Expected-Last-Msg-Id`` = the previous position, so
JetStream rejects a message whose predecessor is missing instead of storing it out of order.
Resume: after the stream's last message when the log agrees with it, else after the checkpoint
(saved only after acks, in batches); ``Nats-Msg-Id`` = position deduplicates any republish, so
the stream's duplicate window is at least the relay's own time to publish again
(``resume_window``). Every message names the stream it must land in (``Nats-Expected-Stream``):
another stream given part of the subjects refuses it instead of storing it out of sight.
An event larger than the server's ``max_payload`` or the stream's ``max_msg_size`` goes out as
its stand-in (the envelope without its data), never retried for ever.
Any failure ends the session (connection); the relay backs off and starts a new one.
A full stream (discard policy "new" at its limits, or JetStream out of storage) refuses the next
event: the relay waits for room, retrying at its longest backoff, drops nothing, shows it as
``stream_full`` and logs an error naming the limit to change (once per ``full_report_interval``).
An event of a type this version does not know (a newer version's, during a rolling upgrade) is
published like any other, with the fields it was stored with; it is logged once per type and
counted, never a reason to stop.
The stream may be edited (or deleted) while the relay is connected: the relay brings its own
settings in line again as at connection, and logs a warning naming what it found, as soon as
JetStream announces an edit, at a publish refused or acknowledged by another stream (through a
new connection), and at the latest every ``stream_check_interval`` seconds, between batches,
never per event. A stream that became one it refuses at connection ends the session as at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec
from nats.aio.client import Client
from nats.js import JetStreamContext, api
from nats.js.errors import APIError

from context_service.adapters.nats.envelope import (
    MSG_ID_HEADER,
    VERSION_HEADER,
    Envelope,
    encode,
    envelope_of,
    subject_for,
)
from context_service.adapters.nats.stream import (
    StreamDrift,
    StreamSpec,
    bring_in_line,
    full_limit,
    last_envelope,
)
from context_service.domain.registry import EVENTS
from context_service.projections.outbox import EventFeed, PositionStore
from context_service.urls import redacted, servers

log = logging.getLogger(__name__)

EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
EXPECTED_STREAM = "Nats-Expected-Stream"
# on the stand-in of an event larger than the server's max_payload or the stream's max_msg_size:
# the envelope without its data
DATA_OMITTED_HEADER = "Cs-Data-Omitted"
T = TypeVar("T")
_HEADER_BLOCK = len(b"NATS/1.0\r\n\r\n")
# seconds from an edit undone to the next check JetStream's announcement asks for: two relays at
# odds over a setting (or a controller reconciling the stream its own way) take turns, no faster
UNDO_GAP = 1.0


class FeedOrderError(RuntimeError):
    """The feed returned a position that does not increase the log (a bug in the feed)."""


class AckTimeoutError(TimeoutError):
    """JetStream did not acknowledge the oldest in-flight message in time."""


class ConnectionLostError(ConnectionError):
    """The NATS connection closed during a session."""


class WrongStreamError(RuntimeError):
    """JetStream acknowledged an event from a stream other than the relay's: the event is not
    where subscribers read, so it is not taken as published."""


class StreamFullError(RuntimeError):
    """The stream refused the event at ``position``: it has no room under ``limit``."""

    def __init__(self, stream: str, limit: str, position: int, cause: str) -> None:
        super().__init__(f"stream {stream} is full ({cause}); the event at position "
                         f"{position} waits for room")
        self.stream, self.limit, self.position, self.cause = stream, limit, position, cause


@dataclass(frozen=True)
class RelaySettings:
    """How the relay talks to NATS. Defaults suit one process on one machine."""

    url: str
    stream: StreamSpec = field(default_factory=StreamSpec)
    batch_size: int = 512  # events read from the feed at a time
    max_in_flight: int = 1024  # published but not yet acknowledged
    save_every: int = 2048  # acknowledged events between checkpoints while busy...
    save_interval: float = 0.5  # ...or seconds, whichever comes first; always when caught up
    idle_wait: float = 1.0  # longest single feed.wait when caught up
    ack_timeout: float = 5.0
    connect_timeout: int = 2
    backoff_initial: float = 0.1
    backoff_max: float = 5.0
    client_name: str = "context-service-relay"
    full_report_interval: float = 60.0  # seconds between the error lines of a full stream
    # longest time an edit of the stream (JetStream's announcement of it lost) goes unnoticed
    stream_check_interval: float = 10.0


def resume_window(settings: RelaySettings) -> float:
    """The shortest duplicate window the relay can rely on: twice the longest time between a
    publish whose ack it did not see (the server may store it late) and the same event's next
    publish (the ack timeout, the longest jittered backoff, a new connection), twice for the new
    session's own requests. Any shorter, a republish could be stored a second time."""
    return 2 * (settings.ack_timeout + settings.connect_timeout + 1.2 * settings.backoff_max)


def _with_resume_window(settings: RelaySettings) -> RelaySettings:
    """``settings`` with a duplicate window of at least ``resume_window`` (within the age limit,
    which JetStream requires the window not to exceed), logged once when raised."""
    stream, needed = settings.stream, resume_window(settings)
    if stream.duplicate_window >= needed:
        return settings
    window = min(needed, stream.max_age) if stream.max_age else needed
    log.warning("relay: a duplicate window of %gs is shorter than the %gs the relay may take to "
                "publish an event again (ack timeout, longest backoff, a new connection); stream "
                "%s gets a duplicate window of %gs", stream.duplicate_window, needed, stream.name,
                window)
    return dataclasses.replace(settings, stream=dataclasses.replace(stream,
                                                                    duplicate_window=window))


@dataclass(frozen=True)
class MessageLimit:
    """The largest message the relay may publish (headers included), and what sets it: the
    server's ``max_payload`` or the stream's ``max_msg_size``, whichever is smaller."""

    size: int
    name: str

    @classmethod
    def of(cls, max_payload: int, max_msg_size: int | None) -> MessageLimit:
        if max_msg_size is not None and max_msg_size > 0 and (
                max_payload <= 0 or max_msg_size < max_payload):
            return cls(max_msg_size, "the stream's max_msg_size")
        return cls(max_payload, "the server's max_payload")


@dataclass(frozen=True)
class RelayStats:
    """Counters for /metrics. ``published`` counts stored messages, ``duplicates`` the republished
    ones JetStream already had, ``omitted`` the events published without their data (larger than
    the server's ``max_payload``), ``unknown`` the events of a type this version does not know
    (published as stored; a republish counts again); ``last_position`` is the last acknowledged
    position; ``stream_full`` is true while the stream refuses events for want of room."""

    published: int
    duplicates: int
    last_position: int
    saved_position: int
    errors: int
    in_flight: int
    connected: bool
    last_error: str | None
    omitted: int = 0
    unknown: int = 0
    stream_full: bool = False


class Relay:
    """Publish the ``feed`` to JetStream, checkpointing in ``positions``.

    Async: ``await relay.run()`` until ``request_stop()`` (graceful: settles in-flight acks and
    saves) or cancellation (a crash: saves nothing more). Threaded: ``start()`` runs the same loop
    in a thread of its own, ``stop()`` ends it gracefully, ``kill()`` abruptly. A relay runs once;
    make a new one to run again. Feed and checkpoint calls run in a private two-thread pool, so
    implementations must be thread-safe.
    """

    def __init__(self, feed: EventFeed, positions: PositionStore, settings: RelaySettings) -> None:
        self._feed = feed
        self._positions = positions
        self._settings = _with_resume_window(settings)
        self._published = self._duplicates = self._errors = self._omitted = self._unknown = 0
        self._unknown_types: set[str] = set()  # logged once each
        self._limit_rechecked = 0  # position of the last too-large event: limit read again
        self._acked: int | None = None  # last acknowledged position, once loaded
        self._saved = self._unsaved = 0
        self._last_save = 0.0
        # _failing: from an error until the relay publishes (or is caught up) again; a retry
        # that connects but fails the same way is the same episode, not a new warning
        self._connected = self._failing = self._stop_requested = False
        self._reconnect_noted = False  # "connected to" logged once per warned failure
        # the last checkpoint write failed: publishing again does not end that failure, only a
        # checkpoint saved does (a busy log publishes at every retry)
        self._save_refused = False
        self._last_error: str | None = None
        self._stream_full = False
        self._full_reported: float | None = None  # when the full stream was last logged
        self._stream_seen = False  # brought in line once: a later difference is an edit
        self._stream_created: object = None  # when the stream the relay last saw was created
        self._check_due = 0.0  # monotonic time of the next check of the stream's settings
        self._undone_at = -UNDO_GAP  # monotonic time the relay last undid an edit
        self._edited: asyncio.Event | None = None  # JetStream announced an edit of the stream
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._lost: asyncio.Event | None = None
        self._pending: deque[tuple[int, asyncio.Future[api.PubAck]]] = deque()
        self._executor: ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def stats(self) -> RelayStats:
        return RelayStats(
            published=self._published,
            duplicates=self._duplicates,
            last_position=self._acked or 0,
            saved_position=self._saved,
            errors=self._errors,
            in_flight=len(self._pending),
            connected=self._connected,
            last_error=self._last_error,
            omitted=self._omitted,
            unknown=self._unknown,
            stream_full=self._stream_full,
        )

    # -- threaded API -------------------------------------------------------------------------

    def start(self) -> None:
        """Run the relay in a daemon thread with its own event loop."""
        if self._thread is not None:
            raise RuntimeError("relay already started")
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._thread_main, args=(ready,), name="nats-relay", daemon=True
        )
        self._thread.start()
        ready.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop gracefully; past ``timeout`` seconds, kill."""
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._thread is not None and self._thread.is_alive():
            log.warning("relay did not stop within %.1fs; cancelling it", timeout)
            self.kill()

    def kill(self) -> None:
        """Cancel at once, settling and saving nothing more: to the outside, a crash."""
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join()

    def _thread_main(self, ready: threading.Event) -> None:
        async def main() -> None:
            task = asyncio.current_task()
            assert task is not None
            self._task = task
            ready.set()
            await self.run()

        try:
            with contextlib.suppress(asyncio.CancelledError):
                asyncio.run(main())
        finally:
            ready.set()  # even if the loop never started

    # -- async API ----------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Ask ``run`` to finish gracefully; callable from any thread."""
        self._stop_requested = True
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)

    async def run(self) -> None:
        """Publish until ``request_stop``; survives NATS and feed outages by backing off."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        if self._stop_requested:
            self._stopping.set()
        self._executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="nats-relay-io")
        self._last_save = time.monotonic()
        backoff = self._settings.backoff_initial
        task = asyncio.current_task()
        try:
            while not self._stopping.is_set():
                before = self._published + self._duplicates
                try:
                    await self._session()
                except Exception as exc:
                    if task is not None and task.cancelling():  # nats-py can mask a cancel
                        raise asyncio.CancelledError from exc
                    self._note_error(exc)
                    if self._published + self._duplicates > before:
                        backoff = self._settings.backoff_initial
                    if isinstance(exc, StreamFullError):  # room comes back slowly, if at all
                        backoff = self._settings.backoff_max
                    await self._pause(backoff * random.uniform(0.8, 1.2))
                    backoff = min(backoff * 2, self._settings.backoff_max)
            try:
                await self._save(force=True)
            except Exception as exc:
                self._note_error(exc)
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def _session(self) -> None:
        settings = self._settings
        if self._acked is None:
            self._acked = self._saved = await self._call(self._positions.load)
        self._lost = asyncio.Event()
        self._edited = asyncio.Event()
        nc = Client()
        watchdog: asyncio.Task[None] | None = None
        try:
            await nc.connect(
                servers=servers(settings.url),
                name=settings.client_name,
                allow_reconnect=False,  # a lost connection ends the session; see the docstring
                max_reconnect_attempts=1,  # with no wait: nats-py otherwise retries for minutes
                reconnect_time_wait=0,
                connect_timeout=settings.connect_timeout,
                error_cb=self._on_nats_error,
                closed_cb=self._on_closed,
            )
            # Acks settle (and leave our window) before nats-py's own counter sees them: give
            # that counter room so it never blocks, our window being the real bound.
            js = nc.jetstream(publish_async_max_pending=2 * settings.max_in_flight + 1)
            await self._watch_edits(nc)  # first: an edit after the check below is announced
            info, _ = await self._bring_in_line(js, connected=False)
            limit = MessageLimit.of(nc.max_payload, info.config.max_msg_size)
            start = await self._stream_tail(js) or self._acked
            if start != self._acked:
                log.info("relay: the stream ends at %d (last ack %d)", start, self._acked)
                self._acked = start
            self._connected = True
            if self._failing and not self._reconnect_noted:
                self._reconnect_noted = True
                log.info("relay: connected to %s, resuming after position %d",
                         redacted(settings.url), start)
            watchdog = asyncio.create_task(self._watch_acks())
            await self._pump(js, start, limit)
            await self._settle_all()
        finally:
            self._connected = False
            if watchdog is not None:
                watchdog.cancel()
            self._drop_pending()
            with contextlib.suppress(Exception):
                await nc.close()

    async def _pump(self, js: JetStreamContext, cursor: int, limit: MessageLimit) -> None:
        settings, stopping, lost = self._settings, self._stopping, self._lost
        assert stopping is not None and lost is not None
        prefix = settings.stream.subject_prefix
        chained = False  # True once this session stored a message: expectations are safe from then
        while not stopping.is_set():
            if lost.is_set():
                raise ConnectionLostError("NATS connection closed")
            if self._edited_or_due():
                await self._settle_all()  # what is in flight lands before the check, or fails
                _, replaced = await self._bring_in_line(js, connected=True)
                if replaced:
                    chained = False  # a new stream: no message before the next to expect
            batch = await self._call(self._feed.read, cursor, settings.batch_size)
            if not batch:
                await self._settle_all()
                await self._save(force=True)
                # caught up, checkpoint included: whatever failed before is over (a save that
                # fails after every reconnect is one failure, not a new one each time)
                self._failing = False
                await self._idle(cursor)
                continue
            for event in batch:
                envelope = envelope_of(event)
                position = envelope.position
                if position <= cursor:
                    raise FeedOrderError(f"feed returned {position} after {cursor}")
                if envelope.name not in EVENTS:
                    self._note_unknown(envelope)
                subject = subject_for(envelope.namespace, envelope.aggregate, envelope.name, prefix)
                headers = {MSG_ID_HEADER: str(position), VERSION_HEADER: "1",
                           EXPECTED_STREAM: settings.stream.name}
                if chained:
                    headers[EXPECTED_LAST_MSG_ID] = str(cursor)
                payload = self._payload(envelope, headers, limit)
                if payload is None:
                    return  # a new session, to read max_payload and max_msg_size again
                if chained:
                    while len(self._pending) >= settings.max_in_flight:
                        await self._settle_one()
                    future = await js.publish_async(subject, payload, headers=headers)
                    self._pending.append((position, future))
                else:
                    try:
                        ack = await js.publish(
                            subject, payload, timeout=settings.ack_timeout, headers=headers
                        )
                    except APIError as exc:
                        self._raise_if_full(exc, position)
                        raise
                    self._on_ack(position, ack)
                    chained = not ack.duplicate
                cursor = position
            await self._save()

    def _payload(
        self, envelope: Envelope, headers: dict[str, str], limit: MessageLimit
    ) -> bytes | None:
        """The message body; for an event the server or the stream cannot take (its
        ``max_payload`` or ``max_msg_size``, headers included), the envelope with empty ``data``
        and ``Cs-Data-Omitted`` set, so the relay goes on instead of failing at it for ever (the
        log keeps the whole event).

        ``None`` the first time an event is too large: a config reload changes the server's limit
        without telling connected clients, and an operator may edit the stream at any time, so
        before data is left out for good both limits are read again on a new connection (an
        operator may have raised one for just this event).
        """
        payload = encode(envelope)
        size = _message_size(payload, headers)
        if limit.size <= 0 or size <= limit.size:
            return payload
        if self._limit_rechecked != envelope.position:
            self._limit_rechecked = envelope.position
            log.info("relay: the event at position %d (%d bytes) exceeds %s of %d bytes read "
                     "on connecting; reconnecting to read its current one",
                     envelope.position, size, limit.name, limit.size)
            return None
        self._omitted += 1
        headers[DATA_OMITTED_HEADER] = "too-large"
        stand_in = msgspec.structs.replace(envelope, data={})
        payload, left_out = encode(stand_in), "its data"
        if _message_size(payload, headers) > limit.size and stand_in.actor is not None:
            # the actor is the caller's subject, which nothing bounds: one of a few KiB kept the
            # stand-in above a max_msg_size accepted at start, refused at every retry
            payload, left_out = encode(msgspec.structs.replace(stand_in, actor=None)), \
                "its data and actor"
        log.error("relay: the event at position %d (%s, %d bytes) exceeds %s of %d bytes; "
                  "published without %s",
                  envelope.position, envelope.name, size, limit.name, limit.size, left_out)
        return payload

    def _note_unknown(self, envelope: Envelope) -> None:
        """An event this version cannot decode is still the log's: it goes out with its stored
        fields and the headers of any other (decoding is not needed to build them)."""
        self._unknown += 1
        if envelope.name not in self._unknown_types:
            self._unknown_types.add(envelope.name)
            log.warning("relay: publishing events of type %s, unknown to this version, as "
                        "stored (first at position %d)", envelope.name, envelope.position)

    async def _stream_tail(self, js: JetStreamContext) -> int:
        """Position of the stream's last message if the feed has the same event there, else 0.

        The stream knows best what it holds: resuming there republishes nothing it stored (even
        past the dedup window) and refills what a crashed server lost after acknowledging it.
        """
        last = await last_envelope(js, self._settings.stream.name)
        if last is None:
            return 0
        found = await self._call(self._feed.read, last.position - 1, 1)
        if found and (found[0].position, found[0].event_id) == (last.position, last.event_id):
            return last.position
        log.warning("relay: the stream ends with position %d, unknown to the log", last.position)
        return 0

    async def _watch_edits(self, nc: Client) -> None:
        """Have JetStream's announcements of the stream's edit, deletion or creation wake the
        relay (core NATS: one may be lost, hence the periodic check as well)."""
        edited = self._edited
        assert edited is not None

        async def announced(_: Any) -> None:
            edited.set()

        name = self._settings.stream.name
        await nc.subscribe(f"$JS.EVENT.ADVISORY.STREAM.*.{name}", cb=announced)
        await nc.flush(timeout=self._settings.connect_timeout)  # the server has it from here on

    def _edited_or_due(self) -> bool:
        """Whether to check the stream now: at the interval, or once an edit is announced, but
        ``UNDO_GAP`` after the relay last undid one (its own update announced, or another
        party undoing it in turn: the check is put off, not dropped)."""
        edited, loop, now = self._edited, self._loop, time.monotonic()
        assert edited is not None and loop is not None
        if now >= self._check_due:
            return True
        if not edited.is_set():
            return False
        wait = self._undone_at + UNDO_GAP - now
        if wait <= 0:
            return True
        edited.clear()
        loop.call_later(wait, edited.set)
        return False

    async def _bring_in_line(self, js: JetStreamContext, connected: bool) -> \
            tuple[api.StreamInfo, bool]:
        """The stream, its owned settings in line, and whether it is another stream than the one
        the relay published into so far (deleted, created anew: its next message follows none).
        ``connected``: an edit while publishing, not since the last connection. Raises
        ``StreamMismatchError`` for a stream the relay refuses, as at start."""
        assert self._edited is not None
        self._edited.clear()
        self._check_due = time.monotonic() + self._settings.stream_check_interval
        info, drift = await bring_in_line(js, self._settings.stream)
        seen, created = self._stream_seen, self._stream_created
        self._stream_seen, self._stream_created = True, info.created
        replaced = seen and (drift.created or info.created != created)
        if seen and (drift or replaced):
            self._undone_at = time.monotonic()
            self._warn_drift(drift, replaced, connected)
        return info, replaced

    def _warn_drift(self, drift: StreamDrift, replaced: bool, connected: bool) -> None:
        """One line naming the edit the relay found and undid, with it as fields."""
        name, acked = self._settings.stream.name, self._acked or 0
        when = "while the relay was connected" if connected else "since the relay last connected"
        if drift.created:
            what = f"was deleted {when}; created it again, from the event after position {acked}"
        elif replaced:
            what = (f"was deleted and created again {when}; publishing into it from the event "
                    f"after position {acked}")
        else:
            what = f"was edited {when}; brought back"
        if drift.changes:
            what += f" ({drift.describe()})"
        log.warning("relay: stream %s %s", name, what,
                    extra={"stream": name, "deleted": replaced, "position": acked,
                           "changes": {key: {"found": found, "restored": wanted}
                                       for key, (found, wanted) in drift.changes.items()}})

    def _on_ack(self, position: int, ack: api.PubAck) -> None:
        if ack.stream != self._settings.stream.name:
            raise WrongStreamError(f"stream {ack.stream} acknowledged the event at position "
                                   f"{position}, not {self._settings.stream.name}")
        if not self._save_refused:
            self._failing = False  # publishing again: a later failure is a new one, warned again
        if ack.duplicate:
            self._duplicates += 1
        else:
            self._published += 1
            if self._stream_full:
                self._stream_full, self._full_reported = False, None
                log.info("relay: stream %s has room again; published up to position %d",
                         self._settings.stream.name, position)
        self._acked = position
        self._unsaved += 1

    async def _settle_one(self) -> None:
        position, future = self._pending[0]
        try:
            ack = await future  # the watchdog and the closed callback fail it when it cannot come
        except APIError as exc:
            self._raise_if_full(exc, position)
            raise
        self._pending.popleft()
        self._on_ack(position, ack)

    def _raise_if_full(self, exc: APIError, position: int) -> None:
        limit = full_limit(exc)
        if limit is not None:
            raise StreamFullError(self._settings.stream.name, limit, position,
                                  exc.description or "refused") from exc

    async def _settle_all(self) -> None:
        while self._pending:
            await self._settle_one()

    async def _save(self, force: bool = False) -> None:
        acked = self._acked
        if acked is None or acked <= self._saved:
            return
        due = self._unsaved >= self._settings.save_every or (
            time.monotonic() - self._last_save >= self._settings.save_interval
        )
        if force or due:
            try:
                await self._call(self._positions.save, acked)
            except Exception:
                self._save_refused = True
                raise
            self._save_refused = False
            self._saved = acked
            self._unsaved = 0
            self._last_save = time.monotonic()

    async def _watch_acks(self) -> None:
        """Fail the in-flight messages when the oldest has waited ``ack_timeout`` for its ack."""
        timeout = self._settings.ack_timeout
        seen: asyncio.Future[api.PubAck] | None = None
        since = time.monotonic()
        while True:
            await asyncio.sleep(timeout / 4)
            oldest = self._pending[0][1] if self._pending else None
            if oldest is not seen:
                seen, since = oldest, time.monotonic()
            elif oldest is not None and time.monotonic() - since >= timeout:
                self._fail_pending(AckTimeoutError(f"no ack within {timeout}s"))

    def _fail_pending(self, error: Exception) -> None:
        """Wake whoever awaits an ack with ``error``; the entries stay for ``_settle_one``."""
        for _, future in self._pending:
            if not future.done():
                future.set_exception(error)

    def _drop_pending(self) -> None:
        """Forget what is in flight at the end of a session; the next one resumes from acks."""
        for _, future in self._pending:
            if not future.done():
                future.cancel()
            elif not future.cancelled():
                future.exception()  # retrieved, so asyncio does not report it
        self._pending.clear()

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, *args)

    async def _idle(self, cursor: int) -> None:
        """Wait for the feed to grow past ``cursor``, a stop request or the connection closing."""
        stopping, lost, edited = self._stopping, self._lost, self._edited
        assert stopping is not None and lost is not None and edited is not None
        waits = [
            asyncio.ensure_future(self._call(self._feed.wait, cursor, self._settings.idle_wait)),
            asyncio.ensure_future(stopping.wait()),
            asyncio.ensure_future(lost.wait()),
            asyncio.ensure_future(edited.wait()),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waits:
                waiter.cancel()
        if waits[0].done() and not waits[0].cancelled():
            waits[0].result()  # re-raises a failed wait

    async def _pause(self, seconds: float) -> None:
        assert self._stopping is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    def _note_error(self, exc: BaseException) -> None:
        self._errors += 1
        error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        # a retry failing the same way again is noise; a new cause (NATS back, but with a
        # stream the relay refuses) is what the operator must read
        repeated = self._failing and error == self._last_error
        self._last_error = error
        if isinstance(exc, StreamFullError):
            self._note_full(exc)  # its own line: the connection itself is fine
            return
        if not repeated:
            self._reconnect_noted = False  # the operator reads when this failure ends
        (log.debug if repeated else log.warning)("relay: %s; retrying", error)
        self._failing = True

    def _note_full(self, exc: StreamFullError) -> None:
        """Log a full stream at once, then once per ``full_report_interval`` while it lasts."""
        self._stream_full = True
        now = time.monotonic()
        if (self._full_reported is not None
                and now - self._full_reported < self._settings.full_report_interval):
            log.debug("relay: %s; retrying", self._last_error)
            return
        self._full_reported = now
        log.error("relay: stream %s is full and refuses new events (%s): publishing waits at "
                  "position %d, retried every %gs, and no event is dropped. %s",
                  exc.stream, exc.cause, exc.position, self._settings.backoff_max,
                  _room_advice(exc.limit),
                  extra={"stream": exc.stream, "limit": exc.limit, "position": exc.position})

    async def _on_nats_error(self, exc: Exception) -> None:
        if isinstance(exc, APIError):
            # nats-py raises the error answer to an async publish (400, 503: a full stream, a
            # wrong expected last id) into this callback instead of failing its future. Answers
            # come in order, so the oldest message still waiting is the refused one: fail it
            # (and those after it) with the cause, instead of waiting out ack_timeout.
            self._fail_pending(exc)
        log.debug("relay: nats client error: %r", exc)

    async def _on_closed(self) -> None:
        if self._lost is not None:
            self._lost.set()
        self._fail_pending(ConnectionLostError("NATS connection closed"))


def _message_size(payload: bytes, headers: dict[str, str]) -> int:
    """What the server counts against ``max_payload`` and ``max_msg_size``: headers too."""
    return len(payload) + _HEADER_BLOCK + sum(len(k) + len(v) + 4 for k, v in headers.items())


def _room_advice(limit: str) -> str:
    """What an operator can change to make room, for the limit a full stream ran into."""
    if limit == "storage":
        return ("JetStream has no storage left for it: raise the server's max_file_store or the "
                "account's JetStream storage limit, or free space on the server")
    if limit == "max_msgs_per_subject":  # discard old would drop events from the stream's middle
        return ("Its discard policy is new: raise the stream's max_msgs_per_subject (or remove "
                "it, with discard_new_per_subject), or set an age limit (CS_NATS_MAX_AGE)")
    return (f"Its discard policy is new: raise the stream's {limit}, set an age limit "
            "(CS_NATS_MAX_AGE), or set its discard policy to old (subscribers then miss the "
            "oldest events they have not read)")
