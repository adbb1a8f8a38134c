"""An index's full records from the log: a single-part publication carries them; a multi-part
one names its upload, whose staged parts precede it on the context's stream."""

from __future__ import annotations

from typing import Any

from context_service.adapters.eventstore.mapper import from_stored
from context_service.adapters.eventstore.store import EVENTS_TABLE
from context_service.domain.context.events import QueryIndexPublished, QueryRecord
from context_service.domain.stream import Recorded

PART_STAGED = "QueryIndexPartStaged"


def index_records(cur: Any, recorded: Recorded) -> tuple[QueryRecord, ...]:
    event = recorded.event
    assert isinstance(event, QueryIndexPublished)
    if not event.upload_id:
        return event.records
    cur.execute(f"SELECT notification_id, originator_version, topic, state FROM {EVENTS_TABLE}"
                " WHERE originator_id = %s AND topic = %s AND notification_id < %s"
                " ORDER BY notification_id", (recorded.stream.id, PART_STAGED,
                                              recorded.position))
    parts: dict[int, tuple[QueryRecord, ...]] = {}
    for row in cur.fetchall():
        staged = from_stored(row["notification_id"], row["originator_version"], row["topic"],
                             bytes(row["state"])).event
        if getattr(staged, "upload_id", None) == event.upload_id:
            parts[staged.part] = staged.records  # type: ignore[attr-defined]
    return tuple(r for part in range(1, event.parts + 1) for r in parts.get(part, ()))


def published_at(cur: Any, position: int) -> Recorded | None:
    """The ``QueryIndexPublished`` recorded at ``position`` (None when it is not one)."""
    cur.execute(f"SELECT notification_id, originator_version, topic, state FROM {EVENTS_TABLE}"
                " WHERE notification_id = %s", (position,))
    row = cur.fetchone()
    if row is None or row["topic"] != "QueryIndexPublished":
        return None
    return from_stored(row["notification_id"], row["originator_version"], row["topic"],
                       bytes(row["state"]))
