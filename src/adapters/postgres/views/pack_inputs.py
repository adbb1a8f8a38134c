"""SQL of ``pack_inputs``: the projection's writes, and the read ports of 7.3 (position and the
namespace folded to it, cached per (namespace, position): a fold at a position never changes)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.adapters.eventstore.mapper import decode_event
from context_service.domain.pack.model import NamespaceAt
from context_service.domain.registry import event_name
from context_service.projections.pack_inputs.fold import EPOCH, fold
from context_service.projections.pack_inputs.view import PackInput

_enc = msgspec.json.Encoder()


def _ns(namespace: str) -> bytes:
    return namespace.encode("utf-8", "surrogatepass")


class PackInputsSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def add(self, inputs: Sequence[PackInput]) -> None:
        with self.cur.copy("COPY pack_inputs (namespace, position, recorded_at, kind, key, name,"
                           " event) FROM STDIN") as copy:
            for one in inputs:
                copy.write_row((_ns(one.namespace), one.position, one.recorded_at, one.kind,
                                one.key, event_name(one.event),
                                _enc.encode(one.event).decode()))


class PackInputReadsSql:
    """``PackInputReads`` over the view."""

    def __init__(self, datastore: PostgresDatastore, cache_size: int = 256) -> None:
        self.datastore = datastore
        self._fold = functools.lru_cache(maxsize=cache_size)(self._namespace_at)

    def resolve(self, namespace: str, head: int | None,
                system_time: datetime | None) -> tuple[int, datetime]:
        bound = head if head is not None else 2**63 - 1
        with self.datastore.transaction(commit=False) as cur:
            if system_time is None:
                cur.execute("SELECT position, recorded_at FROM pack_inputs WHERE namespace = %s"
                            " AND position <= %s ORDER BY position DESC LIMIT 1",
                            (_ns(namespace), bound))
                row = cur.fetchone()
                return (0, EPOCH) if row is None else (row["position"],
                                                      row["recorded_at"].astimezone(UTC))
            cur.execute("SELECT max(position) AS p FROM pack_inputs WHERE namespace = %s"
                        " AND recorded_at <= %s AND position <= %s",
                        (_ns(namespace), system_time, bound))
            row = cur.fetchone()
            position = row["p"] if row is not None and row["p"] is not None else 0
            return position, system_time.astimezone(UTC)

    def namespace_at(self, namespace: str, position: int) -> NamespaceAt:
        return self._fold(namespace, position)

    def _namespace_at(self, namespace: str, position: int) -> NamespaceAt:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT position, recorded_at, kind, key, name, event FROM pack_inputs"
                        " WHERE namespace = %s AND position <= %s ORDER BY position",
                        (_ns(namespace), position))
            rows = cur.fetchall()
        inputs = [PackInput(namespace=namespace, position=r["position"],
                            recorded_at=r["recorded_at"], kind=r["kind"], key=r["key"],
                            event=decode_event(r["name"], r["event"].encode()))
                  for r in rows]
        return fold(namespace, position, inputs)
