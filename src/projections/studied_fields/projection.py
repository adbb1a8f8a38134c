"""studied_fields: keeps the fields of the current usable index of every live memory or
knowledge context (agent-context-api §10, §12.5). An index that stops being usable (a new
revision) leaves the table; one that becomes usable again is laid out from the log."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from context_service.domain.context.events import (
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    QueryIndexPublished,
    QueryRecord,
    RevisionPublished,
)
from context_service.domain.context_pack.readable import COLLECTION_TYPES
from context_service.domain.fields.values import Money, parse
from context_service.domain.pack.model import document_id
from context_service.domain.stream import Recorded
from context_service.projections.agent_data.projection import step
from context_service.projections.agent_data.view import AgentCollection
from context_service.projections.base import by_stream
from context_service.projections.passage_features.features import first_per_id
from context_service.projections.studied_fields.view import (
    FieldName,
    FieldRow,
    FieldsLayout,
    StudiedFieldsView,
)

# Rows written by one batch past which the table's statistics are refreshed in the same
# transaction: the plans of the next requests are then estimated from the rows they read,
# rather than from the table before a bulk load (until autovacuum gets to it, and then their
# plans flip under load).
ANALYZE_ROWS = 1000
_RELEVANT = (ContextCreated, ContextAdopted, ContextDeleted, QueryIndexPublished,
             RevisionPublished)


def usable(collection: AgentCollection | None) -> int:
    """The publication whose fields the table holds for ``collection`` (0: none)."""
    if collection is None or collection.type not in COLLECTION_TYPES or not collection.usable:
        return 0
    return collection.publication


def layout(collection: str, records: Sequence[QueryRecord]) -> FieldsLayout:
    rows: list[FieldRow] = []
    docs: dict[str, None] = {}
    stating: set[tuple[str, str]] = set()
    names: dict[str, tuple[str, int, set[str]]] = {}
    for ord_, record in first_per_id(records):
        doc = document_id(collection, record)
        docs[doc] = None
        for f in record.fields:
            first = (doc, f.name) not in stating
            value = parse(f.type, f.value)
            span = None if f.span is None else (f.span.start, f.span.end)
            rows.append(FieldRow(
                collection=collection, document_id=doc, record_id=record.id, ord=ord_,
                name=f.name, type=f.type, value=value, span=span,
                quote=None if span is None else record.text[span[0]:span[1]], stating=first))
            if first:
                stating.add((doc, f.name))
                type_, count, currencies = names.get(f.name, (f.type, 0, set()))
                if isinstance(value, Money):
                    currencies.add(value.currency)
                names[f.name] = (type_, count + 1, currencies)
    return FieldsLayout(rows=rows, documents=list(docs), names=[
        FieldName(name=n, type=t, documents=k, currencies=tuple(sorted(c)))
        for n, (t, k, c) in sorted(names.items())])


class StudiedFields:
    name = "studied_fields"
    tables: tuple[str, ...] = ("agent_data.field_collections", "agent_data.fields",
                               "agent_data.field_documents", "agent_data.field_names")

    def apply(self, view: StudiedFieldsView, batch: Sequence[Recorded]) -> None:
        touched = by_stream(batch, "context", _RELEVANT)
        if not touched:
            return
        current = view.load(touched.keys())
        written = 0
        for stream_id, events in touched.items():
            before = current.get(stream_id)
            after = before
            published: dict[int, Recorded] = {}
            for recorded in events:
                after = step(after, recorded)
                if isinstance(recorded.event, QueryIndexPublished):
                    published[recorded.position] = recorded
            written += self._write(view, stream_id, before, after, published)
        if written >= ANALYZE_ROWS:
            view.refresh_statistics()

    def _write(self, view: StudiedFieldsView, stream_id: uuid.UUID,
               before: AgentCollection | None, after: AgentCollection | None,
               published: dict[int, Recorded]) -> int:
        """Writes the context's change; returns how many field rows it stored."""
        old, new = usable(before), usable(after)
        stored = 0
        if old and old != new:
            view.drop_index(old)
        if after is None:
            if before is not None:
                view.remove(stream_id)
            return stored
        documents = -1  # unchanged
        if new and new != old:
            recorded = published.get(new) or view.published(new)
            assert recorded is not None, f"no publication at {new}"
            laid = layout(recorded.stream.key, view.records(recorded))
            view.store_index(new, after.namespace, laid)
            documents = len(laid.documents)
            stored = len(laid.rows)
        elif not new:
            documents = 0
        if after != before or documents >= 0:
            view.save(stream_id, after, documents)
        return stored
