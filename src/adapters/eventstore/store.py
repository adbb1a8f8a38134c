"""The event store: PostgreSQL persistence from ``eventsourcing`` behind a small API.

Appends go through group commit; reads return ``Recorded`` events; ``wait_for`` blocks on
LISTEN/NOTIFY until the log grows past a position.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import psycopg
from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg.rows import tuple_row

from context_service.adapters.eventstore.event_size import check_relayable
from context_service.adapters.eventstore.groupcommit import GroupCommit
from context_service.adapters.eventstore.loopcommit import LoopGroupCommit
from context_service.adapters.eventstore.mapper import from_stored, to_stored
from context_service.domain.events import Event
from context_service.domain.stream import Recorded, StreamRef
from context_service.stop_signals import abandonment, refuse_if_abandoned

EVENTS_TABLE = "stored_events"
_LAST = 2**63 - 1  # the largest position a bigserial can take


class EventStore:
    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore
        self.recorder = PostgresApplicationRecorder(datastore, events_table_name=EVENTS_TABLE)
        self.group = GroupCommit(self._insert)
        self._loop_groups: dict[asyncio.AbstractEventLoop, LoopGroupCommit] = {}
        self._head_changed = threading.Condition()
        self._head = 0
        self._closed = threading.Event()
        self._listener: threading.Thread | None = None

    def create_tables(self) -> None:
        self.recorder.create_table()

    # --- writing ------------------------------------------------------------------------------

    def append(self, stream: StreamRef, after_version: int, events: Sequence[Event]) -> int:
        """Append events after ``after_version``; raise IntegrityError on a concurrent append,
        ``EventTooLargeError`` (nothing written) for an event too large to relay and
        ``RequestAbandoned`` (nothing written) for a request the drain abandoned, also while
        the append waits for its transaction. Returns the log position of the last event."""
        stored = self._stored(stream, after_version, events)
        return self._appended(self.group.append(stored, abandonment()))

    async def append_async(self, stream: StreamRef, after_version: int,
                           events: Sequence[Event]) -> int:
        """``append`` for an event loop: awaits the group commit without blocking a thread. A
        writer cancelled (its request abandoned, or its client gone) is left out of a batch not
        yet sent; once its batch is sent it is written with the batch's other writers, unless
        every one of them was cancelled (then the transaction is cancelled; see ``loopcommit``)."""
        group = self._loop_group()
        return self._appended(await group.append(self._stored(stream, after_version, events)))

    def _loop_group(self) -> LoopGroupCommit:
        """This event loop's group commit (each loop needs connections of its own)."""
        loop = asyncio.get_running_loop()
        group = self._loop_groups.get(loop)
        if group is None:
            group = self._loop_groups[loop] = LoopGroupCommit(self._connect_async,
                                                              self.recorder.channel_name)
        return group

    async def _connect_async(self) -> psycopg.AsyncConnection[Any]:
        """A connection like the pool's (same server, database and credentials)."""
        pool = self.datastore.pool
        conninfo = pool.conninfo() if callable(pool.conninfo) else pool.conninfo
        kwargs = pool.kwargs() if callable(pool.kwargs) else pool.kwargs
        params = {k: v for k, v in (kwargs or {}).items() if k != "row_factory"}
        params.setdefault("connect_timeout", 10)  # a server that never answers is an error
        return await psycopg.AsyncConnection.connect(conninfo, autocommit=True, **params)

    def groups(self) -> list[GroupCommit | LoopGroupCommit]:
        """The group commits of this store (for their counters)."""
        return [self.group, *self._loop_groups.values()]

    async def close_async(self) -> None:
        """Close this event loop's append connection (the loop is about to stop)."""
        group = self._loop_groups.pop(asyncio.get_running_loop(), None)
        if group is not None:
            await group.aclose()

    @staticmethod
    def _stored(stream: StreamRef, after_version: int,
                events: Sequence[Event]) -> list[StoredEvent]:
        """The rows of an append; ``EventTooLargeError`` when one could not be relayed,
        ``RequestAbandoned`` when the request the append serves was abandoned."""
        refuse_if_abandoned()
        stored = [to_stored(stream, after_version + i + 1, e) for i, e in enumerate(events)]
        check_relayable(stream, stored)
        return stored

    def _appended(self, positions: list[int]) -> int:
        last = max(positions)
        self.note_head(last)
        return last

    def _insert(self, stored: Sequence[StoredEvent]) -> list[int]:
        """One round trip, one transaction (``cs_append_events``): take the table lock
        (positions follow commit order), insert every row, notify listeners of the new head.
        No pipeline mode: large events (a query index near the 1 MiB body limit) would stall a
        pipelined send."""
        # on a connection the group commit may cancel while the statement runs (every writer
        # of the transaction abandoned at shutdown), and never once it is back in the pool
        with self.group.running_on(self.datastore.get_connection()) as conn, \
                conn.cursor() as cur:
            cur.execute(
                "SELECT * FROM cs_append_events(%s, %b::uuid[], %b::int8[], %b::text[],"
                " %b::bytea[])",
                (self.recorder.channel_name, [e.originator_id for e in stored],
                 [e.originator_version for e in stored], [e.topic for e in stored],
                 [e.state for e in stored]))
            ids = {(r["originator_id"], r["originator_version"]): r["notification_id"]
                   for r in cur.fetchall()}
        return [ids[(e.originator_id, e.originator_version)] for e in stored]

    # --- reading ------------------------------------------------------------------------------

    def load(self, stream: StreamRef, after_version: int = 0) -> list[Recorded]:
        rows = self.recorder.select_events(stream.id, gt=after_version or None)
        # strict: a decision folded without an event of its stream (a newer version's) could be
        # wrong, so deciding refuses one where the log's readers pass over it
        return [from_stored(0, r.originator_version, r.topic, r.state, strict=True)
                for r in rows]

    def read(self, after: int, limit: int, stop: int | None = None) -> list[Recorded]:
        """Up to ``limit`` events after position ``after`` (and not past ``stop``), in log
        order. Our own statement: only the columns an event needs, as tuples (the library's
        reads every column into dictionaries and notification objects first)."""
        sql = (f"SELECT notification_id, originator_version, topic, state FROM {EVENTS_TABLE}"
               " WHERE notification_id > %s AND notification_id <= %s"
               " ORDER BY notification_id LIMIT %s")
        with self.datastore.get_connection() as conn:
            cur = conn.cursor(row_factory=tuple_row, binary=True)  # bytea without hex
            cur.execute(sql, (after, _LAST if stop is None else stop, limit), prepare=True)
            return [from_stored(position, version, topic, state)
                    for position, version, topic, state in cur.fetchall()]

    def read_stream(self, stream: StreamRef) -> list[Recorded]:
        """Every event of one stream with its log position, in order."""
        sql = (f"SELECT notification_id, originator_version, topic, state FROM {EVENTS_TABLE} "
               "WHERE originator_id = %s ORDER BY originator_version")
        with self.datastore.transaction(commit=False) as cur:
            cur.execute(sql, (stream.id,))
            return [from_stored(r["notification_id"], r["originator_version"], r["topic"],
                                bytes(r["state"])) for r in cur.fetchall()]

    def head(self) -> int:
        head = self.recorder.max_notification_id() or 0
        self.note_head(head)
        return head

    def note_head(self, position: int) -> None:
        with self._head_changed:
            if position > self._head:
                self._head = position
                self._head_changed.notify_all()

    def wait_head(self, after: int, timeout: float,
                  stop: threading.Event | None = None) -> None:
        """Sleep until the known head passes ``after``, ``stop`` is set (checked under the
        lock ``wake`` takes, so no wake-up is lost) or ``timeout`` elapses."""
        with self._head_changed:
            if self._head <= after and not (stop is not None and stop.is_set()):
                self._head_changed.wait(timeout)

    def wake(self) -> None:
        with self._head_changed:
            self._head_changed.notify_all()

    def start_listener(self) -> None:
        """Follow other processes' appends: LISTEN on the table's channel, update the head."""
        if self._listener is not None:
            return
        self._listener = threading.Thread(target=self._listen, name="log-listener", daemon=True)
        self._listener.start()

    def _listen(self) -> None:
        channel = self.recorder.channel_name
        while not self._closed.is_set():
            try:
                with self.datastore.get_connection() as conn:
                    conn.execute(f"LISTEN {channel}")
                    conn.commit()
                    while not self._closed.is_set():
                        for notify in conn.notifies(timeout=0.1, stop_after=1):
                            self._heard(notify.payload)
            except Exception:
                self._closed.wait(0.5)

    def _heard(self, payload: str) -> None:
        """An append's notification carries the new head; a bare one means: read it."""
        if payload.isdigit():
            self.note_head(int(payload))
        else:
            self.head()

    def close(self) -> None:
        self.group.close()
        for group in self._loop_groups.values():
            group.discard()
        self._loop_groups.clear()
        self._closed.set()
        self.wake()  # whoever waits for the head returns now
        if self._listener is not None:
            self._listener.join(timeout=5)
        self.datastore.close()
