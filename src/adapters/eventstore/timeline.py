"""Answers from the log itself: a context's event history, and state as of a past point.

``as of`` folds a stream's events up to a log position, or up to a time (events recorded at or
before it, in log order), with the same ``evolve`` the write model uses (through ``Folding``,
linear in the events).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import datetime

from context_service.adapters.eventstore.mapper import from_stored
from context_service.adapters.eventstore.store import EVENTS_TABLE, EventStore
from context_service.domain.context.folding import Folding
from context_service.domain.context.state import ContextState
from context_service.domain.stream import Recorded, context_stream

_BATCH_EVENTS = 1000  # events read from the log at a time ...
_BATCH_BYTES = 4 * 1024 * 1024  # ... and stored bytes (an event can be about 1 MB)


class Timeline:
    def __init__(self, store: EventStore) -> None:
        self.store = store

    def _select(self, stream_ids: Sequence[uuid.UUID], after: int, stop: int | None,
                limit: int | None) -> list[Recorded]:
        """The streams' events after ``after`` (up to ``stop``), in log order: at most
        ``limit`` (``_BATCH_EVENTS`` without), ending with the one that takes them past
        ``_BATCH_BYTES`` stored bytes. Fewer than asked does not mean the end; none does. The
        sizes come from the row headers (``octet_length`` does not read a stored value); the
        running total is taken over the chosen positions alone, so that the sort keeps only
        those (a top-N sort, without the payloads), not the rest of the stream."""
        sql = ("WITH page AS (SELECT notification_id, octet_length(state) AS size"
               f" FROM {EVENTS_TABLE} WHERE originator_id = ANY(%s) AND notification_id > %s")
        params: list[object] = [list(stream_ids), after]
        if stop is not None:
            sql += " AND notification_id <= %s"
            params.append(stop)
        sql += (" ORDER BY notification_id LIMIT %s), batch AS (SELECT notification_id,"
                " size, sum(size) OVER (ORDER BY notification_id) AS total FROM page)"
                " SELECT e.notification_id, e.originator_version, e.topic, e.state"
                f" FROM batch JOIN {EVENTS_TABLE} e USING (notification_id)"
                " WHERE batch.total - batch.size < %s ORDER BY e.notification_id")
        params += [_BATCH_EVENTS if limit is None else min(limit, _BATCH_EVENTS), _BATCH_BYTES]
        with self.store.datastore.transaction(commit=False) as cur:
            cur.execute(sql, params)
            return [from_stored(r["notification_id"], r["originator_version"], r["topic"],
                                bytes(r["state"])) for r in cur.fetchall()]

    def _every(self, stream_ids: Sequence[uuid.UUID], stop: int | None) -> Iterator[Recorded]:
        """The streams' events up to ``stop``, in log order, a bounded batch at a time."""
        after = 0
        while batch := self._select(stream_ids, after, stop, None):
            yield from batch
            after = batch[-1].position

    def events(self, namespace: str, name: str, after: int, limit: int | None,
               since: int) -> list[Recorded]:
        """Events of the stream after ``after`` and from ``since`` on, in log order: at most
        ``limit``, and a few MiB; fewer than asked does not mean the end, none does."""
        return self._select([context_stream(namespace, name).id], max(after, since - 1), None,
                            limit)

    def state_as_of(self, namespace: str, name: str, position: int | None = None,
                    time: datetime | None = None) -> ContextState:
        return self.states_as_of([context_stream(namespace, name).id], position, time).get(
            context_stream(namespace, name).id, ContextState())

    def namespace_as_of(self, namespace: str, position: int | None = None,
                        time: datetime | None = None) -> list[ContextState]:
        """Every context stream ever recorded in the namespace, folded to the point."""
        if "\x00" in namespace:
            return []
        with self.store.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT stream_id FROM context_catalog WHERE namespace = %s",
                        (namespace,))
            ids = [r["stream_id"] for r in cur.fetchall()]
        return list(self.states_as_of(ids, position, time).values())

    def states_as_of(self, stream_ids: Sequence[uuid.UUID], position: int | None = None,
                     time: datetime | None = None) -> dict[uuid.UUID, ContextState]:
        folds: dict[uuid.UUID, Folding] = {}  # linear in the events, grants and all
        stopped: set[uuid.UUID] = set()
        for recorded in self._every(stream_ids, position):
            sid = recorded.stream.id
            if sid in stopped:
                continue
            if time is not None and recorded.event.at > time:
                stopped.add(sid)
                continue
            folds.setdefault(sid, Folding()).apply(recorded.event)
        return {sid: folding.state for sid, folding in folds.items()}
