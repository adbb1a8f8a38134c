"""query_index: folds context events into each context's latest index and its search rows.

Per batch, each touched context is folded once: only the last index published in the batch is
laid out and written, and a deletion (or a new generation of the name) drops the records. The
parts of an open multi-part upload are kept in the view until its publication assembles them
(``staging``). Laying out (tokenizing, inverting) runs one index ahead of the writes, on a
helper thread.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import msgspec

from context_service.domain.context.events import (
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    QueryIndexPartStaged,
    QueryIndexPublished,
    QueryRecord,
    RevisionPublished,
)
from context_service.domain.events import Event
from context_service.domain.query.index import IndexLayout, layout
from context_service.domain.stream import Recorded
from context_service.projections.query_index.staging import FetchParts, Staging
from context_service.projections.query_index.view import IndexedContext, QueryIndexView

_RELEVANT = (ContextCreated, ContextAdopted, ContextDeleted, QueryIndexPublished,
             QueryIndexPartStaged, RevisionPublished)


def _no_parts(numbers: Sequence[int]) -> dict[int, tuple[QueryRecord, ...]]:
    return {}


@dataclass(slots=True)
class Folded:
    """A context after a batch: its row, the records to store (None: unchanged), and whether
    the records it had before the batch are void."""

    context: IndexedContext | None
    records: tuple[QueryRecord, ...] | None = None
    reset: bool = False
    staging: Staging | None = None

    @property
    def relaid(self) -> bool:
        """Whether the context's records must be written anew."""
        return self.context is not None and (self.records is not None or self.reset)


def fold(context: IndexedContext | None, events: Sequence[Event],
         fetch: FetchParts = _no_parts) -> Folded:
    """``fetch``: the records of parts the view holds for the context's open upload."""
    folded = Folded(context, staging=Staging(context.upload if context is not None else None))
    for event in events:
        _step(folded, event, fetch)
    return folded


def _step(folded: Folded, event: Event, fetch: FetchParts) -> None:
    context = folded.context
    staging = folded.staging
    assert staging is not None
    if not isinstance(event, QueryIndexPartStaged | QueryIndexPublished):
        staging.close()
    match event:
        case ContextCreated():
            revision = event.revision.id if event.revision is not None else ""
            folded.context = IndexedContext(event.namespace, event.name, event.type, revision)
            folded.records, folded.reset = None, True
        case ContextAdopted():
            folded.context = IndexedContext(event.namespace, event.name, event.type,
                                            event.current_revision)
            folded.records, folded.reset = None, True
        case ContextDeleted():
            folded.context, folded.records, folded.reset = None, None, True
        case RevisionPublished() if context is not None:
            folded.context = msgspec.structs.replace(context,
                                                     current_revision=event.revision.id)
        case QueryIndexPartStaged() if context is not None:
            staging.stage(event)
        case QueryIndexPublished() if context is not None:
            records = staging.publish(event, fetch)
            folded.context = msgspec.structs.replace(
                context, index_revision=event.revision, records=len(records))
            folded.records = records


class QueryIndex:
    name = "query_index"
    tables: tuple[str, ...] = ("query_contexts", "query_records", "query_postings",
                               "query_staged_parts")

    def __init__(self) -> None:
        self.indexed = 0  # records laid out and written by this instance (rebuilds report it)

    def apply(self, view: QueryIndexView, batch: Sequence[Recorded]) -> None:
        touched: dict[uuid.UUID, list[Event]] = {}
        for recorded in batch:
            if recorded.stream.kind == "context" and isinstance(recorded.event, _RELEVANT):
                touched.setdefault(recorded.stream.id, []).append(recorded.event)
        if not touched:
            return
        current = view.load(touched.keys())
        folded = {sid: fold(current.get(sid), events, _fetcher(view, sid))
                  for sid, events in touched.items()}
        layouts = _laid_out([(sid, f.records or ()) for sid, f in folded.items() if f.relaid])
        for stream_id, one in folded.items():
            index = None
            if one.relaid:
                laid_id, index = next(layouts)
                assert laid_id == stream_id
                self.indexed += len(index.records)
            _write(view, stream_id, current.get(stream_id), one, index)


def _fetcher(view: QueryIndexView, stream_id: uuid.UUID) -> FetchParts:
    def fetch(numbers: Sequence[int]) -> dict[int, tuple[QueryRecord, ...]]:
        return view.staged_parts(stream_id, numbers)
    return fetch


def _laid_out(items: Sequence[tuple[uuid.UUID, Sequence[QueryRecord]]],
              ) -> Iterator[tuple[uuid.UUID, IndexLayout]]:
    """Lay out indexes one ahead on a helper thread, so tokenizing the next index overlaps
    with the database writing the current one (the wait releases the GIL)."""
    if not items:
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="query-index-layout") as pool:
        ahead: deque[tuple[uuid.UUID, Future[IndexLayout]]] = deque()
        for stream_id, records in items:
            ahead.append((stream_id, pool.submit(layout, records)))
            if len(ahead) > 1:
                done_id, done = ahead.popleft()
                yield done_id, done.result()
        while ahead:
            done_id, done = ahead.popleft()
            yield done_id, done.result()


def _write(view: QueryIndexView, stream_id: uuid.UUID, before: IndexedContext | None,
           folded: Folded, index: IndexLayout | None) -> None:
    if folded.context is None:
        if before is not None or folded.reset:
            view.remove(stream_id)
        return
    context = folded.context
    if index is not None:
        view.replace_records(stream_id, index)
        context = msgspec.structs.replace(context, max_weight=index.max_weight)
    staging = folded.staging
    if staging is not None:
        if staging.void:
            view.drop_staged(stream_id)
        for part, records in staging.parts.items():
            view.stage(stream_id, part, records)
        context = msgspec.structs.replace(context, upload=staging.key)
    if context != before:
        view.save(stream_id, context)
