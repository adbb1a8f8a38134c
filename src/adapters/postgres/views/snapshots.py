"""SQL of the snapshot_objects view: written by its projection, read by the snapshot reconciler."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.projections.snapshots.view import Rows, SnapshotObject

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder(SnapshotObject)


class SnapshotObjectsSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, stream_ids: Iterable[uuid.UUID]) -> Rows:
        self.cur.execute("SELECT stream_id, name, doc::text AS doc FROM snapshot_objects"
                         " WHERE stream_id = ANY(%s)", (list(stream_ids),))
        rows: Rows = {}
        for r in self.cur.fetchall():
            rows.setdefault(r["stream_id"], {})[r["name"]] = _dec.decode(r["doc"])
        return rows

    def replace(self, rows: Rows) -> None:
        self.cur.execute("DELETE FROM snapshot_objects WHERE stream_id = ANY(%s)", (list(rows),))
        flat = [(sid, name, row) for sid, named in rows.items() for name, row in named.items()]
        if not flat:
            return
        self.cur.execute(
            "INSERT INTO snapshot_objects (stream_id, name, namespace, context, collected, doc)"
            " SELECT a, b, c, d, e, f::jsonb FROM unnest(%b::uuid[], %b::text[], %b::text[],"
            " %b::text[], %b::bool[], %b::text[]) AS t(a, b, c, d, e, f)",
            ([sid for sid, _, _ in flat], [name for _, name, _ in flat],
             [row.desired.namespace for _, _, row in flat],
             [row.desired.context for _, _, row in flat], [row.collected for _, _, row in flat],
             [_enc.encode(row).decode() for _, _, row in flat]))


class SnapshotObjectsReadsSql:
    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def all(self) -> list[SnapshotObject]:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc::text AS doc FROM snapshot_objects"
                        " ORDER BY namespace, context, name")
            return [_dec.decode(r["doc"]) for r in cur.fetchall()]
