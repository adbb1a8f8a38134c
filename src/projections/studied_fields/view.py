"""What ``studied_fields`` writes: one row per (record, field) of a usable index, its
documents and a summary per field name, and the context's state that decides usability."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Protocol

import msgspec

from context_service.domain.context.events import QueryRecord
from context_service.domain.fields.values import Value
from context_service.domain.stream import Recorded
from context_service.projections.agent_data.view import AgentCollection


class FieldRow(msgspec.Struct, frozen=True, kw_only=True):
    collection: str
    document_id: str
    record_id: str
    ord: int
    name: str
    type: str
    value: Value
    span: tuple[int, int] | None
    quote: str | None
    stating: bool  # the first record of its document carrying the field


class FieldName(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    type: str
    documents: int
    currencies: tuple[str, ...]


class FieldsLayout(msgspec.Struct, frozen=True, kw_only=True):
    rows: Sequence[FieldRow]
    documents: Sequence[str]
    names: Sequence[FieldName]


class StudiedFieldsView(Protocol):
    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, AgentCollection]: ...

    def save(self, stream_id: uuid.UUID, collection: AgentCollection, documents: int) -> None:
        ...

    def remove(self, stream_id: uuid.UUID) -> None: ...

    def drop_index(self, publication: int) -> None: ...

    def store_index(self, publication: int, namespace: str, layout: FieldsLayout) -> None: ...

    def refresh_statistics(self) -> None:
        """Let the database re-estimate the tables after a large change of their rows."""

    def published(self, position: int) -> Recorded | None:
        """The ``QueryIndexPublished`` recorded at ``position`` (None when it is not one)."""

    def records(self, recorded: Recorded) -> tuple[QueryRecord, ...]:
        """The full records of a publication (multi-part ones assembled from the log)."""
