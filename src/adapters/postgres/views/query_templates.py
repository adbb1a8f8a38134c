"""SQL of the query_templates view: the projection's writes and the template routes' reads."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.domain.query_template.state import QueryTemplateState, query_template_stream

_enc = msgspec.json.Encoder()
_state = msgspec.json.Decoder(QueryTemplateState)


class QueryTemplateSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, QueryTemplateState]:
        self.cur.execute("SELECT stream_id, doc FROM query_templates WHERE stream_id = ANY(%s)",
                         (list(stream_ids),))
        return {r["stream_id"]: _state.decode(r["doc"]) for r in self.cur.fetchall()}

    def save(self, rows: list[tuple[uuid.UUID, str, QueryTemplateState]]) -> None:
        self.cur.execute(
            "INSERT INTO query_templates (stream_id, namespace, id, retired, doc)"
            " SELECT a, b, c, d, e FROM unnest(%b::uuid[], %b::bytea[], %b::text[],"
            " %b::bool[], %b::text[]) AS t(a, b, c, d, e)"
            " ON CONFLICT (stream_id) DO UPDATE SET retired = EXCLUDED.retired,"
            " doc = EXCLUDED.doc",
            ([sid for sid, _, _ in rows], [ns.encode("utf-8", "surrogatepass")
                                           for _, ns, _ in rows],
             [st.id for _, _, st in rows], [st.retired for _, _, st in rows],
             [_enc.encode(st).decode() for _, _, st in rows]))


class QueryTemplateReadsSql:
    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def list(self, namespace: str) -> Sequence[QueryTemplateState]:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc FROM query_templates WHERE namespace = %s ORDER BY id",
                        (namespace.encode("utf-8", "surrogatepass"),))
            return [_state.decode(r["doc"]) for r in cur.fetchall()]

    def get(self, namespace: str, template_id: str) -> QueryTemplateState | None:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc FROM query_templates WHERE stream_id = %s",
                        (query_template_stream(namespace, template_id).id,))
            row = cur.fetchone()
        return None if row is None else _state.decode(row["doc"])

    def active_ids(self, namespace: str) -> frozenset[str]:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT id FROM query_templates WHERE namespace = %s AND NOT retired",
                        (namespace.encode("utf-8", "surrogatepass"),))
            return frozenset(r["id"] for r in cur.fetchall())
