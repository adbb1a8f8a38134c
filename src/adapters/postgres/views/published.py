"""An index's full records from the log, inside a view's transaction: a single-part
publication carries them; a multi-part one is assembled from the parts staged on the context's
stream since its previous publication (the domain's ``assemble``, as everywhere else)."""

from __future__ import annotations

from typing import Any

from context_service.adapters.eventstore.mapper import from_stored
from context_service.adapters.eventstore.store import EVENTS_TABLE
from context_service.domain.context.events import QueryIndexPublished, QueryRecord
from context_service.domain.context.index_parts import UPLOAD_EVENTS, assemble
from context_service.domain.registry import event_name_of
from context_service.domain.stream import Recorded

_PUBLISHED = "QueryIndexPublished"
_TOPICS = [event_name_of(cls) for cls in UPLOAD_EVENTS]


def index_records(cur: Any, recorded: Recorded) -> tuple[QueryRecord, ...]:
    event = recorded.event
    assert isinstance(event, QueryIndexPublished)
    if not event.upload_id:
        return event.records
    cur.execute(f"SELECT coalesce(max(notification_id), 0) AS previous FROM {EVENTS_TABLE}"
                " WHERE originator_id = %s AND topic = %s AND notification_id < %s",
                (recorded.stream.id, _PUBLISHED, recorded.position))
    row = cur.fetchone()
    previous = row["previous"] if row is not None else 0
    cur.execute(f"SELECT notification_id, originator_version, topic, state FROM {EVENTS_TABLE}"
                " WHERE originator_id = %s AND notification_id > %s AND notification_id < %s"
                " AND topic = ANY(%s) ORDER BY notification_id",
                (recorded.stream.id, previous, recorded.position, _TOPICS))
    events = [from_stored(r["notification_id"], r["originator_version"], r["topic"],
                          bytes(r["state"])).event for r in cur.fetchall()]
    return assemble(events, event)


def published_at(cur: Any, position: int) -> Recorded | None:
    """The ``QueryIndexPublished`` recorded at ``position`` (None when it is not one)."""
    cur.execute(f"SELECT notification_id, originator_version, topic, state FROM {EVENTS_TABLE}"
                " WHERE notification_id = %s", (position,))
    row = cur.fetchone()
    if row is None or row["topic"] != _PUBLISHED:
        return None
    return from_stored(row["notification_id"], row["originator_version"], row["topic"],
                       bytes(row["state"]))
