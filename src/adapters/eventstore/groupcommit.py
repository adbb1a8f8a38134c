"""Group commit: concurrent appends share one transaction.

The event table is locked per insert transaction (so positions follow commit order); committing
each request alone serializes every writer behind that lock. Here the first waiting writer
becomes the leader and commits everything queued so far in one transaction. When that shared
transaction hits a conflict, each request of the batch is retried alone, so only the writer that
actually conflicted sees the error.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from eventsourcing.persistence import IntegrityError, StoredEvent

Insert = Callable[[Sequence[StoredEvent]], Sequence[int] | None]


@dataclass(eq=False)
class _Request:
    events: Sequence[StoredEvent]
    positions: list[int] = field(default_factory=list)
    error: BaseException | None = None
    done: bool = False


class GroupCommit:
    def __init__(self, insert: Insert) -> None:
        self._insert = insert
        self._queue: list[_Request] = []
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self.batches = 0
        self.requests = 0

    def append(self, events: Sequence[StoredEvent]) -> list[int]:
        """Commit ``events`` atomically (possibly with others'); return their positions."""
        request = _Request(events)
        with self._queue_lock:
            self._queue.append(request)
        with self._leader:
            if not request.done:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._commit(batch)
        if request.error is not None:
            raise request.error
        return request.positions

    def _commit(self, batch: list[_Request]) -> None:
        self.batches += 1
        self.requests += len(batch)
        try:
            self._run(batch, [e for r in batch for e in r.events])
        except IntegrityError:
            if len(batch) == 1:
                self._fail(batch[0], IntegrityError("conflict"))
                return
            for request in batch:
                try:
                    self._run([request], list(request.events))
                except BaseException as exc:
                    self._fail(request, exc)
        except BaseException as exc:
            for request in batch:
                self._fail(request, exc)

    def _run(self, batch: list[_Request], events: list[StoredEvent]) -> None:
        ids = list(self._insert(events) or [])
        offset = 0
        for request in batch:
            count = len(request.events)
            request.positions = ids[offset:offset + count]
            offset += count
            request.done = True

    @staticmethod
    def _fail(request: _Request, exc: BaseException) -> None:
        request.error = exc
        request.done = True
