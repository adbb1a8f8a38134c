"""query_index: folds context events into each context's latest index and its search rows.

Per batch, each touched context is folded once: only the last index published in the batch is
laid out and written, and a deletion (or a new generation of the name) drops the records.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from src.domain.context.events import (
    ContextCreated,
    ContextDeleted,
    QueryIndexPublished,
    QueryRecord,
    RevisionPublished,
)
from src.domain.events import Event
from src.domain.query.index import layout
from src.domain.stream import Recorded
from src.projections.query_index.view import IndexedContext, QueryIndexView

_RELEVANT = (ContextCreated, ContextDeleted, QueryIndexPublished, RevisionPublished)


@dataclass(slots=True)
class Folded:
    """A context after a batch: its row, the records to store (None: unchanged), and whether
    the records it had before the batch are void."""

    context: IndexedContext | None
    records: tuple[QueryRecord, ...] | None = None
    reset: bool = False


def fold(context: IndexedContext | None, events: Sequence[Event]) -> Folded:
    folded = Folded(context)
    for event in events:
        _step(folded, event)
    return folded


def _step(folded: Folded, event: Event) -> None:
    context = folded.context
    match event:
        case ContextCreated():
            revision = event.revision.id if event.revision is not None else ""
            folded.context = IndexedContext(event.namespace, event.name, event.type, revision)
            folded.records, folded.reset = None, True
        case ContextDeleted():
            folded.context, folded.records, folded.reset = None, None, True
        case RevisionPublished() if context is not None:
            folded.context = msgspec.structs.replace(context,
                                                     current_revision=event.revision.id)
        case QueryIndexPublished() if context is not None:
            folded.context = msgspec.structs.replace(
                context, index_revision=event.revision, records=len(event.records))
            folded.records = event.records


class QueryIndex:
    name = "query_index"
    tables: tuple[str, ...] = ("query_contexts", "query_records", "query_postings")

    def apply(self, view: QueryIndexView, batch: Sequence[Recorded]) -> None:
        touched: dict[uuid.UUID, list[Event]] = {}
        for recorded in batch:
            if recorded.stream.kind == "context" and isinstance(recorded.event, _RELEVANT):
                touched.setdefault(recorded.stream.id, []).append(recorded.event)
        if not touched:
            return
        current = view.load(touched.keys())
        for stream_id, events in touched.items():
            _write(view, stream_id, current.get(stream_id), fold(current.get(stream_id), events))


def _write(view: QueryIndexView, stream_id: uuid.UUID, before: IndexedContext | None,
           folded: Folded) -> None:
    if folded.context is None:
        if before is not None or folded.reset:
            view.remove(stream_id)
        return
    context = folded.context
    if folded.records is not None or folded.reset:
        index = layout(folded.records or ())
        view.replace_records(stream_id, index)
        context = msgspec.structs.replace(context, max_weight=index.max_weight)
    if context != before:
        view.save(stream_id, context)
