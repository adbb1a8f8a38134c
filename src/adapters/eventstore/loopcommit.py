"""Group commit on an event loop: the loop's writers share transactions without a thread.

The HTTP process decides most writes on its event loop; handing each batch to a committer
thread and back costs two GIL hand-offs per transaction, and under load each waits for the busy
loop to let go of the interpreter. Here one task on the loop drains what its writers queued into
one transaction over an async connection, so the answer is just another I/O event of the loop.
Conflicts are handled as in ``GroupCommit``: a refused shared transaction is retried request by
request, so only the writer that actually conflicted sees the error.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import IntegrityError, OperationalError, StoredEvent

Connect = Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]
APPEND_SQL = ("SELECT originator_id, originator_version, notification_id FROM cs_append_events("
              "%s, %b::uuid[], %b::int8[], %b::text[], %b::bytea[])")
_Request = tuple[Sequence[StoredEvent], "asyncio.Future[list[int]]"]


class LoopGroupCommit:
    def __init__(self, connect: Connect, channel: str) -> None:
        self._connect = connect
        self._channel = channel
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._queue: list[_Request] = []
        self._draining: asyncio.Task[None] | None = None
        self.batches = 0
        self.requests = 0
        self.seconds = 0.0

    async def append(self, events: Sequence[StoredEvent]) -> list[int]:
        future: asyncio.Future[list[int]] = asyncio.get_running_loop().create_future()
        self._queue.append((events, future))
        if self._draining is None:
            self._draining = asyncio.ensure_future(self._drain())
        return await future

    async def aclose(self) -> None:
        """Finish what is queued, then close the connection (on the loop, before it stops)."""
        if self._draining is not None:
            await asyncio.shield(self._draining)
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    def discard(self) -> None:
        """Close the connection from outside its loop (which may be gone already)."""
        if self._conn is not None and not self._conn.closed:
            self._conn.pgconn.finish()
        self._conn = None

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                started = time.perf_counter()
                await self._commit(batch)
                self.batches += 1
                self.requests += len(batch)
                self.seconds += time.perf_counter() - started
        finally:
            self._draining = None

    async def _commit(self, batch: list[_Request]) -> None:
        try:
            self._settle(batch, await self._insert([e for events, _ in batch for e in events]))
        except IntegrityError:
            if len(batch) == 1:
                self._fail(batch, IntegrityError("conflict"))
                return
            for request in batch:
                try:
                    self._settle([request], await self._insert(list(request[0])))
                except Exception as exc:
                    self._fail([request], exc)
        except Exception as exc:
            self._fail(batch, exc)

    async def _insert(self, stored: list[StoredEvent]) -> list[int]:
        try:
            if self._conn is None or self._conn.closed:
                self._conn = await self._connect()
            cur = await self._conn.execute(APPEND_SQL, (
                self._channel, [e.originator_id for e in stored],
                [e.originator_version for e in stored], [e.topic for e in stored],
                [e.state for e in stored]))
            ids = {(r[0], r[1]): r[2] for r in await cur.fetchall()}
        except psycopg.IntegrityError as exc:
            raise IntegrityError(str(exc)) from exc
        except psycopg.OperationalError as exc:
            if self._conn is not None:
                await self._conn.close()
                self._conn = None
            raise OperationalError(str(exc)) from exc
        return [ids[(e.originator_id, e.originator_version)] for e in stored]

    @staticmethod
    def _settle(batch: list[_Request], ids: list[int]) -> None:
        offset = 0
        for events, future in batch:
            if not future.done():  # a writer whose request was cancelled no longer waits
                future.set_result(ids[offset:offset + len(events)])
            offset += len(events)

    @staticmethod
    def _fail(batch: list[_Request], exc: Exception) -> None:
        for _, future in batch:
            if not future.done():
                future.set_exception(exc)
