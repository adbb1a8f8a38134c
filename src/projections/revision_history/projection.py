"""revision_history: every appended revision of a context, in publication order."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol

from src.domain.context.events import ContextCreated, Revision, RevisionPublished
from src.domain.stream import Recorded


class RevisionView(Protocol):
    def append(self, rows: list[tuple[uuid.UUID, int, Revision]]) -> None: ...


class RevisionHistory:
    name = "revision_history"
    tables = ("revision_history",)

    def apply(self, view: RevisionView, batch: Sequence[Recorded]) -> None:
        rows: list[tuple[uuid.UUID, int, Revision]] = []
        for r in batch:
            event = r.event
            if (isinstance(event, RevisionPublished) and event.appended) or (isinstance(event, ContextCreated) and event.revision is not None):
                rows.append((r.stream.id, r.position, event.revision))
        if rows:
            view.append(rows)
