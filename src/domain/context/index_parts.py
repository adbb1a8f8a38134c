"""How the parts of a multi-part index upload become its records (spec 1.7, 5.1).

A context has at most one open upload: a part of another upload (or of another revision) opens a
new one and discards the staged parts; any publication, a new revision, a delete or a new
generation closes it. A publication with an ``upload_id`` is the open upload's parts 1..``parts``,
in part order; a re-sent part replaces the one staged before. Projections, the mirror and the
pack inputs all assemble indexes with this one fold, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Iterable

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

# The events that open, fill or close an upload (a reader may skip every other one).
UPLOAD_EVENTS: tuple[type[Event], ...] = (ContextCreated, ContextAdopted, ContextDeleted,
                                          RevisionPublished, QueryIndexPartStaged,
                                          QueryIndexPublished)


class IncompleteUpload(Exception):
    """A publication names a part the log does not hold (a log that decide did not write)."""


class StagedUpload:
    """The open upload of one context stream, folded event by event."""

    def __init__(self) -> None:
        self.key: tuple[str, str] | None = None  # (revision, upload id)
        self.parts: dict[int, tuple[QueryRecord, ...]] = {}

    def apply(self, event: Event) -> tuple[QueryRecord, ...] | None:
        """Fold one event of the stream; a publication returns the index's records."""
        match event:
            case QueryIndexPartStaged():
                key = (event.revision, event.upload_id)
                if key != self.key:
                    self.key, self.parts = key, {}
                self.parts[event.part] = event.records
                return None
            case QueryIndexPublished():
                records = self.records_of(event)
                self.key, self.parts = None, {}
                return records
            case ContextCreated() | ContextAdopted() | ContextDeleted() | RevisionPublished():
                self.key, self.parts = None, {}
        return None

    def records_of(self, event: QueryIndexPublished) -> tuple[QueryRecord, ...]:
        if not event.upload_id:
            return event.records
        if self.key != (event.revision, event.upload_id):
            raise IncompleteUpload(f"upload {event.upload_id!r} has no staged parts")
        return join_parts(self.parts, event.parts)


def join_parts(parts: dict[int, tuple[QueryRecord, ...]], count: int) -> tuple[QueryRecord, ...]:
    missing = [k for k in range(1, count + 1) if k not in parts]
    if missing:
        raise IncompleteUpload(f"parts {missing[:5]} were never staged")
    return tuple(r for k in range(1, count + 1) for r in parts[k])


def assemble(events: Iterable[Event], publication: QueryIndexPublished) -> tuple[QueryRecord, ...]:
    """The records of ``publication``, given the stream's events since its previous publication
    (in log order, ``publication`` itself excluded)."""
    staged = StagedUpload()
    for event in events:
        staged.apply(event)
    return staged.records_of(publication)
