"""SQL of the pool_status view."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.domain.pool.state import PoolState

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder(PoolState)


class PoolSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, names: Iterable[str]) -> dict[str, PoolState]:
        self.cur.execute("SELECT name, doc::text AS doc FROM pool_status WHERE name = ANY(%s)",
                         (list(names),))
        return {r["name"]: _dec.decode(r["doc"]) for r in self.cur.fetchall()}

    def save(self, states: list[PoolState]) -> None:
        self.cur.execute(
            "INSERT INTO pool_status (name, live, doc) SELECT a, b, c::jsonb"
            " FROM unnest(%b::text[], %b::bool[], %b::text[]) AS t(a, b, c)"
            " ON CONFLICT (name) DO UPDATE SET live = EXCLUDED.live, doc = EXCLUDED.doc",
            ([s.name for s in states], [s.live for s in states],
             [_enc.encode(s).decode() for s in states]))


class PoolReadsSql:
    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def list(self) -> list[PoolState]:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc::text AS doc FROM pool_status WHERE live ORDER BY name")
            return [_dec.decode(r["doc"]) for r in cur.fetchall()]

    def get(self, name: str) -> PoolState | None:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc::text AS doc FROM pool_status WHERE name = %s AND live",
                        (name,))
            row = cur.fetchone()
        return None if row is None else _dec.decode(row["doc"])
