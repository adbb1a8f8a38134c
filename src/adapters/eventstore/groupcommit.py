"""Group commit: concurrent appends share one transaction.

The event table is locked per insert transaction (so positions follow commit order); committing
each request alone serializes every writer behind that lock. Here one committer thread takes
everything queued while the previous transaction ran and commits it in one transaction. Each
request is a future, so a blocking caller waits on it and an event loop awaits it without a
thread of its own. When a shared transaction hits a conflict, each request of the batch is
retried alone, so only the writer that actually conflicted sees the error. A request whose HTTP
request was abandoned while it waited in the queue (answered ``503``, retry elsewhere) is refused
instead of committed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future

from eventsourcing.persistence import IntegrityError, StoredEvent

from context_service.stop_signals import RequestAbandoned, refuse_if_abandoned

Insert = Callable[[Sequence[StoredEvent]], Sequence[int] | None]
Abandoned = Callable[[], bool]
_Request = tuple[Sequence[StoredEvent], "Future[list[int]]"]


def _never() -> bool:
    return False


class GroupCommit:
    def __init__(self, insert: Insert) -> None:
        self._insert = insert
        self._queue: list[tuple[_Request, Abandoned]] = []
        self._wake = threading.Condition()
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
            self._queue.append(((events, future), abandoned))
            self._wake.notify()
        return future

    def append(self, events: Sequence[StoredEvent], abandoned: Abandoned = _never) -> list[int]:
        """Commit ``events`` and wait; return their positions."""
        return self.submit(events, abandoned).result()

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

    def _commit(self, batch: list[_Request]) -> None:
        started = time.perf_counter()
        try:
            self._commit_batch(batch)
        finally:
            self.batches += 1
            self.requests += len(batch)
            self.seconds += time.perf_counter() - started

    def _commit_batch(self, batch: list[_Request]) -> None:
        try:
            self._settle(batch, [e for events, _ in batch for e in events])
        except IntegrityError:
            if len(batch) == 1:
                batch[0][1].set_exception(IntegrityError("conflict"))
                return
            for request in batch:
                try:
                    self._settle([request], list(request[0]))
                except BaseException as exc:
                    request[1].set_exception(exc)
        except BaseException as exc:
            for _, future in batch:
                future.set_exception(exc)

    def _settle(self, batch: list[_Request], events: list[StoredEvent]) -> None:
        ids = list(self._insert(events) or [])
        offset = 0
        for request_events, future in batch:
            count = len(request_events)
            future.set_result(ids[offset:offset + count])
            offset += count


def _still_wanted(queued: list[tuple[_Request, Abandoned]]) -> list[_Request]:
    """The requests to commit; one whose HTTP request was abandoned while it waited is refused."""
    wanted = []
    for request, abandoned in queued:
        try:
            refuse_if_abandoned(abandoned)
        except RequestAbandoned as exc:
            request[1].set_exception(exc)
        else:
            wanted.append(request)
    return wanted
