"""The full record list of a published index, read from the log (multi-part uploads included).

A publication of a multi-part upload carries no records: they sit in the part events staged
since the stream's previous publication, which the views' reader (``views.published``) finds
and assembles (``index_parts``). This opens its own read transaction for callers outside a view.
"""

from __future__ import annotations

import uuid

from context_service.adapters.eventstore.store import EventStore
from context_service.adapters.postgres.views.published import index_records as read_records
from context_service.adapters.postgres.views.published import published_at
from context_service.domain.context.events import QueryRecord


class NotAPublication(LookupError):
    """The position holds no index publication of the stream."""


def index_records(store: EventStore, stream_id: uuid.UUID,
                  publication_position: int) -> tuple[QueryRecord, ...]:
    """The records of the index that the ``QueryIndexPublished`` at ``publication_position``
    (an event of stream ``stream_id``) made current, in publish order."""
    with store.datastore.transaction(commit=False) as cur:
        recorded = published_at(cur, publication_position)
        if recorded is None or recorded.stream.id != stream_id:
            raise NotAPublication(publication_position)
        return read_records(cur, recorded)
