"""Group commit on an event loop: the loop's writers share transactions without a thread.

The HTTP process decides most writes on its event loop. One connection per loop carries the
append transactions: what the loop's writers queued while one transaction ran goes out as the
next one, sent from the very callback that saw the previous one finish, so the database never
waits for the loop to come round to it. The connection is driven through libpq's non-blocking
interface (``psycopg.pq``) with its socket registered on the loop: a driver round of awaits
per transaction would cost loop turns, and under load each turn is long.

Conflicts are handled as in ``GroupCommit``: a refused shared transaction is retried request by
request, so only the writer that actually conflicted sees the error. A transaction that gets no
answer within ``timeout`` seconds (a server that went away without the socket saying so) fails its
writers and the connection is replaced, so writes never wait forever.

A writer that stops waiting (the HTTP drain abandoned its request and answered it ``503 ... retry
against another instance``) must not be written after that answer: it is left out of the next
transaction, and a transaction in flight that nobody waits for any more is cancelled on the
server. So is a transaction that timed out, before its connection is closed (the cancel request
itself bounded by ``timeout``): a closed socket alone does not stop a statement waiting for a
lock, which would then commit for writers that were told it failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import (
    DatabaseError,
    IntegrityError,
    OperationalError,
    StoredEvent,
)
from psycopg import pq
from psycopg.pq.abc import PGresult

Connect = Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]
APPEND_SQL = (b"SELECT originator_id::text, originator_version, notification_id"
              b" FROM cs_append_events($1, $2, $3, $4, $5)")
_TEXT, _BINARY = 0, 1
# parameter types: text, uuid[], int8[], text[], bytea[]
_TYPES = (25, 2951, 1016, 1009, 1001)
_FORMATS = (_TEXT, _BINARY, _BINARY, _BINARY, _BINARY)
_UNIQUE_VIOLATION = b"23505"
_Request = tuple[Sequence[StoredEvent], "asyncio.Future[list[int]]"]


def binary_array(element_oid: int, items: Sequence[bytes]) -> bytes:
    """A one-dimensional array without NULLs in PostgreSQL's binary wire format."""
    parts = [struct.pack("!iiiii", 1, 0, element_oid, len(items), 1)]
    for item in items:
        parts.append(struct.pack("!i", len(item)))
        parts.append(item)
    return b"".join(parts)


def _uuid(value: uuid.UUID | str) -> uuid.UUID:
    return value if isinstance(value, uuid.UUID) else uuid.UUID(value)


def append_params(channel: str, stored: Sequence[StoredEvent]) -> list[bytes]:
    return [channel.encode(),
            binary_array(2950, [_uuid(e.originator_id).bytes for e in stored]),
            binary_array(20, [struct.pack("!q", e.originator_version) for e in stored]),
            binary_array(25, [e.topic.encode() for e in stored]),
            binary_array(17, [e.state for e in stored])]


class LoopGroupCommit:
    def __init__(self, connect: Connect, channel: str, timeout: float = 10.0) -> None:
        self._connect = connect
        self._channel = channel
        self.timeout = timeout
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._fd = -1  # the connection's socket, kept: libpq forgets it when the link breaks
        self._deadline: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connecting: asyncio.Task[None] | None = None
        self._cancelling: asyncio.Task[None] | None = None  # a cancel request on its way
        self._queue: list[_Request] = []
        self._alone: deque[_Request] = deque()  # retried one per transaction after a conflict
        self._inflight: list[_Request] | None = None
        self._timed_out: list[_Request] | None = None  # the transaction in flight, once expired
        self._results: list[PGresult] = []
        self._started = 0.0
        self._idle = asyncio.Event()
        self._idle.set()
        self.batches = 0
        self.requests = 0
        self.seconds = 0.0

    async def append(self, events: Sequence[StoredEvent]) -> list[int]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[list[int]] = loop.create_future()
        self._queue.append((events, future))
        if self._conn is None:
            if self._connecting is None:
                self._connecting = loop.create_task(self._open(loop))
        elif self._inflight is None:
            self._next()
        try:
            return await future
        except asyncio.CancelledError:  # the writer's request was abandoned
            self._abandoned()
            raise

    async def aclose(self) -> None:
        """Finish what is queued, then close the connection (on the loop, before it stops).
        A connection or a cancel request on its way is awaited itself: ``_idle`` may be set
        meanwhile (a broken link fails the writers), and waiting on a set event never yields."""
        while True:
            pending = self._connecting or self._cancelling
            if pending is not None:
                await asyncio.shield(pending)
            elif self._queue or self._alone or self._inflight is not None:
                await self._idle.wait()
            else:
                break
        conn, self._conn = self._conn, None
        if conn is not None:
            self._unwatch(conn)
            await conn.close()
        self._disarm()

    def discard(self) -> None:
        """Close the connection from outside its loop (which may be gone already)."""
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            conn.pgconn.finish()

    # --- the connection -------------------------------------------------------------------------

    async def _open(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            conn = await self._connect()
        except Exception as exc:
            self._fail_all(OperationalError(str(exc)))
            return
        finally:
            self._connecting = None
        conn.pgconn.nonblocking = 1
        self._conn, self._loop, self._fd = conn, loop, conn.pgconn.socket
        loop.add_reader(self._fd, self._readable)
        self._next()

    def _unwatch(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Stop watching the socket before it is closed (also when libpq already found the link
        broken): a watch left behind would outlive its socket and be taken for the next one."""
        self._disarm()
        if self._loop is not None and not self._loop.is_closed() and self._fd >= 0:
            self._loop.remove_reader(self._fd)
            self._loop.remove_writer(self._fd)
        self._fd = -1

    def _broken(self, exc: Exception) -> None:
        """The connection failed: its transaction's writers get the error; the next write
        connects again."""
        conn, self._conn = self._conn, None
        if conn is not None:
            self._unwatch(conn)
            conn.pgconn.finish()
        inflight, self._inflight, self._timed_out = self._inflight, None, None
        self._fail(inflight or [], OperationalError(str(exc)))
        self._fail_all(OperationalError(str(exc)))

    # --- one transaction at a time --------------------------------------------------------------

    def _next(self) -> None:
        """Send the next transaction: one writer retried alone, else everything queued. Not
        while a cancel request is on its way: it would cancel whatever statement runs when it
        arrives."""
        if self._conn is None or self._inflight is not None or self._cancelling is not None:
            return
        batch = self._waited_for()
        if not batch:
            self._idle.set()
            return
        self._idle.clear()
        pgconn = self._conn.pgconn
        stored = [e for events, _ in batch for e in events]
        try:
            pgconn.send_query_params(APPEND_SQL, append_params(self._channel, stored),
                                     _TYPES, _FORMATS, _TEXT)
            self._inflight, self._results, self._started = batch, [], time.perf_counter()
            assert self._loop is not None
            self._deadline = self._loop.call_later(self.timeout, self._expired, batch)
            self._flush()
        except psycopg.Error as exc:
            self._inflight = batch
            self._broken(exc)

    def _waited_for(self) -> list[_Request]:
        """The next transaction's writers: one retried alone, else everything queued; a writer
        that no longer waits is left out (its request was abandoned, and answered so)."""
        while self._alone:
            request = self._alone.popleft()
            if not request[1].done():
                return [request]
        batch, self._queue = self._queue, []
        return [r for r in batch if not r[1].done()]

    # --- writers that stop waiting --------------------------------------------------------------

    def _abandoned(self) -> None:
        """A writer was cancelled: when it was the last one waiting for the transaction in
        flight, ask the server to cancel that transaction (still waiting for the table lock,
        say), so nothing is written for writers that were told it was not."""
        batch = self._inflight
        if (batch is None or self._conn is None or self._cancelling is not None
                or not all(f.cancelled() for _, f in batch)):
            return
        assert self._loop is not None
        self._cancelling = self._loop.create_task(self._cancel(self._conn))

    async def _cancel(self, conn: psycopg.AsyncConnection[Any]) -> None:
        try:
            # a best effort: failing, the append finishes (or fails) as it would have
            with contextlib.suppress(Exception):
                await conn.cancel_safe(timeout=self.timeout)
        finally:
            self._cancelling = None
            self._next()

    def _flush(self) -> None:
        assert self._conn is not None and self._loop is not None
        if self._conn.pgconn.flush() == 0:
            self._loop.remove_writer(self._fd)
        else:  # a large batch: the rest goes out when the socket can take it
            self._loop.add_writer(self._fd, self._writable)

    def _writable(self) -> None:
        try:
            self._flush()
        except psycopg.Error as exc:
            self._broken(exc)

    def _readable(self) -> None:
        if self._conn is None:
            return
        pgconn = self._conn.pgconn
        try:
            pgconn.consume_input()
            while self._inflight is not None and not pgconn.is_busy():
                result = pgconn.get_result()
                if result is None:
                    self._finished()
                else:
                    self._results.append(result)
        except psycopg.Error as exc:
            self._broken(exc)

    def _expired(self, batch: list[_Request]) -> None:
        """No answer in time: cancel the statement on the server before the connection goes.
        Closed alone, its socket does not stop a statement waiting for a lock, and the server
        would commit a write its writers were told failed."""
        if self._inflight is not batch or self._conn is None:
            return
        self._timed_out = batch
        assert self._loop is not None
        if self._cancelling is None:
            self._cancelling = self._loop.create_task(self._cancel(self._conn))
        self._cancelling.add_done_callback(lambda _: self._unanswered(batch))

    def _unanswered(self, batch: list[_Request]) -> None:
        """The cancel request went out (or could not): a transaction still unanswered fails its
        writers and the connection is replaced; one answered meanwhile was settled as usual."""
        if self._inflight is batch:
            self._broken(OperationalError(self._no_answer()))

    def _no_answer(self) -> str:
        return f"no answer to an append within {self.timeout}s"

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _finished(self) -> None:
        self._disarm()
        batch, self._inflight = self._inflight or [], None
        timed_out, self._timed_out = batch is self._timed_out, None
        self.batches += 1
        self.requests += len(batch)
        self.seconds += time.perf_counter() - self._started
        failed = [r for r in self._results if r.status != pq.ExecStatus.TUPLES_OK]
        if not failed:
            self._settle(batch, self._results)
        elif failed[0].error_field(pq.DiagnosticField.SQLSTATE) == _UNIQUE_VIOLATION:
            if len(batch) == 1:
                self._fail(batch, IntegrityError("conflict"))
            else:
                self._alone.extend(batch)
        elif timed_out:  # cancelled as it timed out: its writers hear so, as when no answer came
            self._fail(batch, OperationalError(self._no_answer()))
        else:
            message = (failed[0].error_message or b"append failed").decode(errors="replace")
            self._fail(batch, DatabaseError(message.strip()))
        self._next()

    @staticmethod
    def _settle(batch: list[_Request], results: list[PGresult]) -> None:
        ids: dict[tuple[object, int], int] = {}
        for result in results:
            for row in range(result.ntuples):
                stream, version, position = (result.get_value(row, c) for c in range(3))
                assert stream is not None and version is not None and position is not None
                ids[(uuid.UUID(stream.decode()), int(version))] = int(position)
        for events, future in batch:
            if not future.done():  # a writer whose request was cancelled no longer waits
                future.set_result([ids[(e.originator_id, e.originator_version)]
                                   for e in events])

    @staticmethod
    def _fail(batch: Sequence[_Request], exc: Exception) -> None:
        for _, future in batch:
            if not future.done():
                future.set_exception(exc)

    def _fail_all(self, exc: Exception) -> None:
        waiting = [*self._alone, *self._queue]
        self._alone.clear()
        self._queue = []
        self._fail(waiting, exc)
        self._idle.set()
