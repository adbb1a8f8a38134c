"""The optional ConfigMap mirror of query indexes (spec 6.5, ``CS_MIRROR_QUERY_INDEX=true``).

Follows the log from its own checkpoint: each index publication writes the context's mirror
(server-side apply, safe to repeat) and each context deletion removes it; the checkpoint moves
only after the cluster accepted. Queries never read the mirror.
"""

from __future__ import annotations

import logging
import threading
from typing import Protocol

import msgspec

from context_service.domain.cluster import Cluster, QueryIndexMirror
from context_service.domain.context.events import ContextDeleted, QueryIndexPublished
from context_service.domain.query.record import record_document
from context_service.domain.stream import Recorded
from context_service.projections.outbox import PositionStore

log = logging.getLogger(__name__)


class LogReader(Protocol):
    """The part of the event store this worker uses."""

    def read(self, after: int, limit: int) -> list[Recorded]: ...

    def wait_head(self, after: int, timeout: float,
                  stop: threading.Event | None = None) -> None: ...


class QueryMirror:
    def __init__(self, cluster: Cluster, log_reader: LogReader,
                 checkpoint: PositionStore) -> None:
        self.cluster = cluster
        self.store = log_reader
        self.checkpoint = checkpoint
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def apply(self, recorded: Recorded) -> None:
        stream, event = recorded.stream, recorded.event
        if stream.kind != "context":
            return
        if isinstance(event, QueryIndexPublished):
            index = {"revision": event.revision,
                     "records": [record_document(r) for r in event.records]}
            kind = event.records[0].type if event.records else ""
            self.cluster.apply_query_mirror(QueryIndexMirror(
                namespace=stream.namespace, context=stream.key, type=kind,
                revision=event.revision, index_json=msgspec.json.encode(index).decode()))
        elif isinstance(event, ContextDeleted):
            self.cluster.delete_query_mirror(stream.namespace, stream.key)

    def run_once(self) -> int:
        position = self.checkpoint.load()
        batch = self.store.read(position, 100)
        for recorded in batch:
            self.apply(recorded)
        if batch:
            self.checkpoint.save(batch[-1].position)
        return len(batch)

    def start(self) -> QueryMirror:
        self._thread = threading.Thread(target=self._loop, name="query-mirror", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                if self.run_once() == 0:
                    self.store.wait_head(self.checkpoint.load(), 1.0, self._stop)
            except Exception:
                log.exception("query-index mirror failed; retrying")
                self._stop.wait(2.0)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
