"""The query index view's write interface, and what the projection keeps per context.

Only the latest index of a live context is held; a deletion removes the context's row and
records. ``current_revision`` is kept here too, so index validity is decided from one view.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Protocol

import msgspec

from context_service.domain.context.events import QueryRecord
from context_service.domain.query.index import IndexLayout


class IndexedContext(msgspec.Struct, frozen=True):
    namespace: str
    name: str
    type: str
    current_revision: str = ""
    index_revision: str | None = None  # None: no index published for this generation
    records: int = 0
    max_weight: int = 0  # bounds every score term, so the search can use 32-bit arithmetic
    upload: tuple[str, str] | None = None  # (revision, upload id) of the parts the view holds


class QueryIndexView(Protocol):
    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, IndexedContext]:
        """The rows of the given live contexts (absent when deleted or never created)."""

    def save(self, stream_id: uuid.UUID, context: IndexedContext) -> None: ...

    def remove(self, stream_id: uuid.UUID) -> None:
        """Forget the context and its records."""

    def replace_records(self, stream_id: uuid.UUID, index: IndexLayout) -> None:
        """Drop the context's records and store ``index`` instead."""

    def staged_parts(self, stream_id: uuid.UUID,
                     numbers: Sequence[int]) -> dict[int, tuple[QueryRecord, ...]]:
        """The records of the context's staged parts among ``numbers``."""

    def stage(self, stream_id: uuid.UUID, part: int, records: tuple[QueryRecord, ...]) -> None:
        """Keep (or replace) one part of the context's open upload."""

    def drop_staged(self, stream_id: uuid.UUID) -> None:
        """Forget every staged part of the context."""
