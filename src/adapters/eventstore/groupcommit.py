"""Group commit: concurrent appends share one transaction.

The event table is locked per insert transaction (so positions follow commit order); committing
each request alone serializes every writer behind that lock. Here one committer thread takes
everything queued while the previous transaction ran and commits it in one transaction. Each
request is a future, so a blocking caller waits on it and an event loop awaits it without a
thread of its own. When a shared transaction hits a conflict, each request of the batch is
retried alone, so only the writer that actually conflicted sees the error. A request whose HTTP
request was abandoned while it waited in the queue (answered ``503``, retry elsewhere) is refused
instead of committed.

A transaction already running when the drain abandons its requests (still waiting for the table
lock, say) is cancelled on the server once every writer of it was abandoned (a writer that still
waits keeps it): the insert runs its statement on a connection it opens through ``running_on``,
which the group commit may cancel until the statement ended, and never after: the connection is
known from before its statement until it is back in the pool, under a fence the cancel takes, so
a cancel cannot reach the statement of the connection's next user (PostgreSQL drops a cancel
that finds the connection idle).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, wait
from contextlib import AbstractContextManager
from typing import NamedTuple, Protocol, TypeVar

from eventsourcing.persistence import IntegrityError, StoredEvent

from context_service.stop_signals import RequestAbandoned, refuse_if_abandoned

# one statement, one transaction; run inside ``running_on`` so that it can be cancelled
Insert = Callable[[Sequence[StoredEvent]], Sequence[int] | None]
Abandoned = Callable[[], bool]
ABANDON_POLL = 0.1  # seconds between a waiting writer's looks at whether its request was abandoned
CANCEL_WAIT = 5.0  # seconds a cancel request may take to reach the server


class Cancellable(Protocol):
    """A connection whose statement in progress can be cancelled on the server (psycopg's)."""

    def cancel_safe(self, *, timeout: float = ...) -> None: ...


C = TypeVar("C", bound=Cancellable)


class _Write(NamedTuple):
    """One writer's request: its events, the future it waits on, whether it was abandoned."""

    events: Sequence[StoredEvent]
    future: Future[list[int]]
    abandoned: Abandoned


def _never() -> bool:
    return False


class GroupCommit:
    def __init__(self, insert: Insert) -> None:
        self._insert = insert
        self._queue: list[_Write] = []
        self._wake = threading.Condition()
        # taken to cancel the transaction in flight, and by its insert from its statement's end
        # until its connection is back in the pool: a cancel reaches no other statement
        self._fence = threading.Lock()
        self._inflight: list[_Write] | None = None
        self._connection: Cancellable | None = None  # the in-flight statement's, while it may run
        self._cancelled: list[_Write] | None = None  # the transaction a cancel was sent to
        self._closed = False
        self._thread: threading.Thread | None = None
        self.batches = 0
        self.requests = 0
        self.seconds = 0.0  # spent in append transactions

    def submit(self, events: Sequence[StoredEvent],
               abandoned: Abandoned = _never) -> Future[list[int]]:
        """Queue ``events`` to be committed atomically (possibly with others'); the future
        gives their positions, or the error that refused them (``RequestAbandoned`` when
        ``abandoned`` says so as their transaction starts)."""
        future: Future[list[int]] = Future()
        with self._wake:
            if self._closed:
                raise RuntimeError("the event store is closed")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="group-commit",
                                                daemon=True)
                self._thread.start()
            self._queue.append(_Write(events, future, abandoned))
            self._wake.notify()
        return future

    def append(self, events: Sequence[StoredEvent], abandoned: Abandoned = _never) -> list[int]:
        """Commit ``events`` and wait; return their positions. While it waits, the writer looks
        whether its request was abandoned: its transaction is then cancelled if nobody else
        waits for it (``RequestAbandoned``), and the writer is told what happened either way."""
        future = self.submit(events, abandoned)
        while not wait((future,), ABANDON_POLL).done:
            if abandoned():
                self._cancel_if_abandoned()
        return future.result()

    @contextlib.contextmanager
    def running_on(self, connecting: AbstractContextManager[C]) -> Iterator[C]:
        """For the insert: the connection its statement runs on (one statement; ``connecting``
        lends it, from a pool say), open inside. Refuses (``RequestAbandoned``) a transaction
        every writer of which was abandoned before its statement was sent."""
        with contextlib.ExitStack() as fence, connecting as connection:
            with self._fence:
                batch = self._inflight
                if batch and all(write.abandoned() for write in batch):
                    raise RequestAbandoned("the request was abandoned at shutdown; nothing was "
                                           "written")
                self._connection = connection
            try:
                yield connection
            finally:
                fence.enter_context(self._fence)  # released once the connection is back
                self._connection = None

    def _cancel_if_abandoned(self) -> None:
        """Cancel the statement in flight if every writer of its transaction was abandoned. A
        cancel that comes before the statement reached the server is dropped there: the next
        look (a writer still waiting) sends another."""
        with self._fence:
            batch, connection = self._inflight, self._connection
            if connection is None or not batch \
                    or not all(write.abandoned() for write in batch):
                return
            self._cancelled = batch
            with contextlib.suppress(Exception):  # a best effort: it commits, or fails, as is
                connection.cancel_safe(timeout=CANCEL_WAIT)

    def close(self) -> None:
        """Commit what is queued, then stop the committer."""
        with self._wake:
            self._closed = True
            self._wake.notify()
            thread = self._thread
        if thread is not None:
            thread.join(timeout=10)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closed:
                    self._wake.wait()
                queued, self._queue = self._queue, []
                if not queued:
                    return
            batch = _still_wanted(queued)
            if batch:
                self._commit(batch)

    def _commit(self, batch: list[_Write]) -> None:
        started = time.perf_counter()
        try:
            self._commit_batch(batch)
        finally:
            self.batches += 1
            self.requests += len(batch)
            self.seconds += time.perf_counter() - started

    def _commit_batch(self, batch: list[_Write]) -> None:
        try:
            self._settle(batch, [e for write in batch for e in write.events])
        except IntegrityError:
            if len(batch) == 1:
                batch[0].future.set_exception(IntegrityError("conflict"))
                return
            for write in batch:
                try:
                    self._settle([write], list(write.events))
                except BaseException as exc:
                    write.future.set_exception(exc)
        except BaseException as exc:
            for write in batch:
                write.future.set_exception(exc)

    def _settle(self, batch: list[_Write], events: list[StoredEvent]) -> None:
        """One transaction: ``batch``'s writers get their positions, or its error
        (``RequestAbandoned`` when it failed after a cancel sent for them)."""
        with self._fence:
            self._inflight = batch
        try:
            ids = list(self._insert(events) or [])
        except Exception as exc:
            if self._cancelled is batch:
                raise RequestAbandoned("the request was abandoned at shutdown; its transaction "
                                       "was cancelled, nothing was written") from exc
            raise
        finally:
            with self._fence:
                self._inflight = self._cancelled = None
        offset = 0
        for write in batch:
            count = len(write.events)
            write.future.set_result(ids[offset:offset + count])
            offset += count


def _still_wanted(queued: list[_Write]) -> list[_Write]:
    """The requests to commit; one whose HTTP request was abandoned while it waited is refused."""
    wanted = []
    for write in queued:
        try:
            refuse_if_abandoned(write.abandoned)
        except RequestAbandoned as exc:
            write.future.set_exception(exc)
        else:
            wanted.append(write)
    return wanted
