"""The full record list of a published index, read from the log (multi-part uploads included).

A publication of a multi-part upload carries no records: they sit in the part events staged
since the stream's previous publication, which this reads and assembles (``index_parts``).
"""

from __future__ import annotations

import uuid

from context_service.adapters.eventstore.mapper import from_stored
from context_service.adapters.eventstore.store import EVENTS_TABLE, EventStore
from context_service.domain.context.events import QueryIndexPublished, QueryRecord
from context_service.domain.context.index_parts import UPLOAD_EVENTS, assemble
from context_service.domain.registry import event_name_of

_PUBLISHED = "QueryIndexPublished"
_TOPICS = [event_name_of(cls) for cls in UPLOAD_EVENTS]


class NotAPublication(LookupError):
    """The position holds no index publication of the stream."""


def index_records(store: EventStore, stream_id: uuid.UUID,
                  publication_position: int) -> tuple[QueryRecord, ...]:
    """The records of the index that the ``QueryIndexPublished`` at ``publication_position``
    (an event of stream ``stream_id``) made current, in publish order."""
    with store.datastore.transaction(commit=False) as cur:
        cur.execute(
            f"SELECT coalesce(max(notification_id), 0) AS previous FROM {EVENTS_TABLE}"
            " WHERE originator_id = %s AND topic = %s AND notification_id < %s",
            (stream_id, _PUBLISHED, publication_position))
        row = cur.fetchone()
        previous = row["previous"] if row is not None else 0
        cur.execute(
            f"SELECT notification_id, originator_version, topic, state FROM {EVENTS_TABLE}"
            " WHERE originator_id = %s AND notification_id > %s AND notification_id <= %s"
            " AND topic = ANY(%s) ORDER BY notification_id",
            (stream_id, previous, publication_position, _TOPICS))
        rows = cur.fetchall()
    events = [from_stored(r["notification_id"], r["originator_version"], r["topic"],
                          bytes(r["state"])) for r in rows]
    if not events or events[-1].position != publication_position:
        raise NotAPublication(publication_position)
    publication = events[-1].event
    if not isinstance(publication, QueryIndexPublished):
        raise NotAPublication(publication_position)
    return assemble((r.event for r in events[:-1]), publication)
