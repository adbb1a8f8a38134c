"""The optional ConfigMap mirror of query indexes (spec 6.5, ``CS_MIRROR_QUERY_INDEX=true``).

Follows the log from its own checkpoint: each index publication writes the context's mirror
(server-side apply, safe to repeat) and each context deletion removes it; the checkpoint moves
only after the cluster accepted. A multi-part upload is mirrored when its publication arrives,
with the records read back from the log; an index too large for one ConfigMap removes the
mirror (a stale one would show an index that is no longer current). Queries never read it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from typing import Protocol

import msgspec

from context_service.domain.cluster import Cluster, QueryIndexMirror
from context_service.domain.context.events import ContextDeleted, QueryIndexPublished, QueryRecord
from context_service.domain.query.record import record_document
from context_service.domain.stream import Recorded
from context_service.projections.outbox import PositionStore

log = logging.getLogger(__name__)
# ConfigMaps hold at most 1 MiB of data; leave room for the object's metadata.
MAX_MIRROR_BYTES = 1_000_000
IndexRecords = Callable[[uuid.UUID, int], tuple[QueryRecord, ...]]
"""The records of the publication at a log position of a stream (``eventstore.indexes``)."""


class LogReader(Protocol):
    """The part of the event store this worker uses."""

    def read(self, after: int, limit: int) -> list[Recorded]: ...

    def wait_head(self, after: int, timeout: float,
                  stop: threading.Event | None = None) -> None: ...


class QueryMirror:
    def __init__(self, cluster: Cluster, log_reader: LogReader, checkpoint: PositionStore,
                 index_records: IndexRecords) -> None:
        self.cluster = cluster
        self.index_records = index_records
        self.store = log_reader
        self.checkpoint = checkpoint
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def apply(self, recorded: Recorded) -> None:
        stream, event = recorded.stream, recorded.event
        if stream.kind != "context":
            return
        if isinstance(event, QueryIndexPublished):
            records = (self.index_records(stream.id, recorded.position) if event.upload_id
                       else event.records)
            index = {"revision": event.revision,
                     "records": [record_document(r) for r in records]}
            text = msgspec.json.encode(index).decode()
            if len(text.encode()) > MAX_MIRROR_BYTES:
                log.warning("query index too large for its ConfigMap mirror; mirror removed",
                            extra={"namespace": stream.namespace, "context": stream.key,
                                   "records": len(records)})
                self.cluster.delete_query_mirror(stream.namespace, stream.key)
                return
            kind = records[0].type if records else ""
            self.cluster.apply_query_mirror(QueryIndexMirror(
                namespace=stream.namespace, context=stream.key, type=kind,
                revision=event.revision, index_json=text))
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
