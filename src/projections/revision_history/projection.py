"""revision_history: every appended revision of a context, in publication order."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Protocol

from src.domain.context.events import ContextCreated, Revision, RevisionPublished
from src.domain.events import Event
from src.domain.stream import Recorded


class RevisionView(Protocol):
    def append(self, rows: list[tuple[uuid.UUID, int, Revision]]) -> None: ...


def appended_revision(event: Event) -> Revision | None:
    """The revision an event appends to the history (a publish of a new id, or a clone)."""
    if isinstance(event, RevisionPublished) and event.appended:
        return event.revision
    if isinstance(event, ContextCreated):
        return event.revision
    return None


class RevisionHistory:
    name: str = "revision_history"
    tables: tuple[str, ...] = ("revision_history",)

    def apply(self, view: RevisionView, batch: Sequence[Recorded]) -> None:
        rows: list[tuple[uuid.UUID, int, Revision]] = []
        for r in batch:
            revision = appended_revision(r.event)
            if revision is not None:
                rows.append((r.stream.id, r.position, revision))
        if rows:
            view.append(rows)
