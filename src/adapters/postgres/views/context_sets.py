"""SQL of the context_sets view: the projection's writes and the reads of the set routes."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.domain.context_set.state import ContextSetState, context_set_stream

_enc = msgspec.json.Encoder()
_state = msgspec.json.Decoder(ContextSetState)


class ContextSetSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, ContextSetState]:
        self.cur.execute("SELECT stream_id, doc FROM context_sets WHERE stream_id = ANY(%s)",
                         (list(stream_ids),))
        return {r["stream_id"]: _state.decode(r["doc"]) for r in self.cur.fetchall()}

    def save(self, rows: list[tuple[uuid.UUID, str, ContextSetState]]) -> None:
        self.cur.execute(
            "INSERT INTO context_sets (stream_id, namespace, id, archived, doc)"
            " SELECT a, b, c, d, e FROM unnest(%b::uuid[], %b::bytea[], %b::text[],"
            " %b::bool[], %b::text[]) AS t(a, b, c, d, e)"
            " ON CONFLICT (stream_id) DO UPDATE SET archived = EXCLUDED.archived,"
            " doc = EXCLUDED.doc",
            ([sid for sid, _, _ in rows], [ns.encode() for _, ns, _ in rows],
             [st.id for _, _, st in rows], [st.archived for _, _, st in rows],
             [_enc.encode(st).decode() for _, _, st in rows]))


class ContextSetReadsSql:
    """The read port over the table above."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def list(self, namespace: str) -> Sequence[ContextSetState]:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc FROM context_sets WHERE namespace = %s ORDER BY id",
                        (namespace.encode(),))
            return [_state.decode(r["doc"]) for r in cur.fetchall()]

    def get(self, namespace: str, set_id: str) -> ContextSetState | None:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc FROM context_sets WHERE stream_id = %s",
                        (context_set_stream(namespace, set_id).id,))
            row = cur.fetchone()
        return None if row is None else _state.decode(row["doc"])
