"""SQL of the collection_admission view: the projection's writes, and the catalog listing the
agent routes read, which keeps only the collections agents may read (§3.4 rule 5)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.domain.context.state import ContextState
from context_service.domain.events import Subject
from context_service.domain.workspace.admission import (
    Origin,
    SetInForce,
    admitted_at,
    admitted_names,
)
from context_service.projections.collection_admission.view import (
    AdmissionChanges,
    MemberKey,
    NameKey,
)

_state = msgspec.json.Decoder(ContextState)


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _origin(row: Any) -> Origin:
    return Origin(row["created_position"], bool(row["member_created"]), row["deleted_position"])


class CollectionAdmissionSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def members(self, keys: Collection[MemberKey]) -> set[MemberKey]:
        pairs = list(keys)
        self.cur.execute(
            "SELECT m.namespace, m.subject FROM collection_admission_members m"
            " JOIN unnest(%b::bytea[], %b::bytea[]) AS t(ns, s)"
            " ON m.namespace = t.ns AND sha256(m.subject) = sha256(t.s) AND m.subject = t.s",
            ([_bytes(ns) for ns, _ in pairs], [_bytes(s) for _, s in pairs]))
        found = {(bytes(r["namespace"]), bytes(r["subject"])) for r in self.cur.fetchall()}
        return {k for k in pairs if (_bytes(k[0]), _bytes(k[1])) in found}

    def origins(self, keys: Collection[NameKey]) -> dict[NameKey, Origin]:
        pairs = list(keys)
        self.cur.execute(
            "SELECT o.namespace, o.name, o.created_position, o.member_created,"
            " o.deleted_position FROM collection_origins o"
            " JOIN unnest(%b::text[], %b::text[]) AS t(ns, n)"
            " ON o.namespace = t.ns AND o.name = t.n",
            ([k[0] for k in pairs], [k[1] for k in pairs]))
        return {(r["namespace"], r["name"]): _origin(r) for r in self.cur.fetchall()}

    def save(self, changes: AdmissionChanges) -> None:
        self._members(changes.members)
        self._origins(changes)
        self._sets(changes)

    def _members(self, members: dict[MemberKey, bool]) -> None:
        if not members:
            return
        ns = [_bytes(k[0]) for k in members]
        subjects = [_bytes(k[1]) for k in members]
        self.cur.execute(
            "DELETE FROM collection_admission_members m USING unnest(%b::bytea[], %b::bytea[])"
            " AS t(ns, s) WHERE m.namespace = t.ns AND sha256(m.subject) = sha256(t.s)"
            " AND m.subject = t.s", (ns, subjects))
        kept = [i for i, held in enumerate(members.values()) if held]
        if kept:
            self.cur.execute(
                "INSERT INTO collection_admission_members (namespace, subject)"
                " SELECT * FROM unnest(%b::bytea[], %b::bytea[])",
                ([ns[i] for i in kept], [subjects[i] for i in kept]))

    def _origins(self, changes: AdmissionChanges) -> None:
        if not changes.origins:
            return
        keys = list(changes.origins)
        self.cur.execute(
            "DELETE FROM collection_origins o USING unnest(%b::text[], %b::text[]) AS t(ns, n)"
            " WHERE o.namespace = t.ns AND o.name = t.n",
            ([k[0] for k in keys], [k[1] for k in keys]))
        kept = list(changes.origins.items())
        self.cur.execute(
            "INSERT INTO collection_origins (namespace, name, created_position,"
            " member_created, deleted_position) SELECT * FROM unnest(%b::text[], %b::text[],"
            " %b::int8[], %b::bool[], %b::int8[])",
            ([k[0] for k, _ in kept], [k[1] for k, _ in kept],
             [o.position for _, o in kept], [o.by_member for _, o in kept],
             [o.deleted for _, o in kept]))

    def _sets(self, changes: AdmissionChanges) -> None:
        if not changes.sets:
            return
        keys = list(changes.sets)
        self.cur.execute(
            "DELETE FROM collection_admission_sets s USING unnest(%b::bytea[], %b::text[])"
            " AS t(ns, id) WHERE s.namespace = t.ns AND s.set_id = t.id",
            ([_bytes(k[0]) for k in keys], [k[1] for k in keys]))
        kept = [(k, s) for k, s in changes.sets.items() if s is not None]
        for (namespace, set_id), version in kept:  # a few per batch: arrays of arrays differ
            self.cur.execute(
                "INSERT INTO collection_admission_sets (namespace, set_id, position,"
                " collections) VALUES (%b, %b, %b, %b::text[])",
                (_bytes(namespace), set_id, version.position, list(version.collections)))


class AdmittedContextsSql:
    """The live contexts of a namespace that agents may read, as ``CatalogListing`` reads them:
    the catalog joined with each context's origin and the active sets' versions, in one
    statement (one snapshot), judged by ``admitted_names``. A context whose recorded origin is
    not its current creation (the view still catching up) is left out until it is."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def list(self, namespace: str, subject: Subject | None) -> Sequence[ContextState]:
        states, names = self._judged(namespace)
        return [s for s in states if s.name in names
                and (subject is None or any(g.subject == subject for g in s.grants))]

    def refused(self, namespace: str) -> frozenset[str]:
        """The live collections of the namespace that agents may not read (yet): what even the
        bootstrap administrator's credentials, which read any name, are kept from."""
        states, names = self._judged(namespace)
        return frozenset(s.name for s in states if s.name not in names)

    def admitted_at(self, namespace: str, position: int) -> frozenset[str]:
        """The collections of the namespace whose generation that lived at log ``position``
        may reach agents (``admitted_at``), deleted ones included: a pack or field query at an
        earlier point."""
        if "\x00" in namespace:
            return frozenset()
        with self.datastore.transaction(commit=False) as cur:
            cur.execute(
                "SELECT 0 AS part, o.name, o.created_position, o.member_created,"
                " o.deleted_position, NULL::bigint AS position, NULL::text[] AS collections"
                " FROM collection_origins o WHERE o.namespace = %s AND o.created_position <= %s"
                " AND (o.deleted_position IS NULL OR o.deleted_position > %s)"
                " UNION ALL SELECT 1, NULL, NULL, NULL, NULL, s.position, s.collections"
                " FROM collection_admission_sets s WHERE s.namespace = %s",
                (namespace, position, position, _bytes(namespace)), prepare=True)
            rows = cur.fetchall()
        sets = [SetInForce(r["position"], tuple(r["collections"]))
                for r in rows if r["part"] == 1]
        return frozenset(r["name"] for r in rows if r["part"] == 0
                         and admitted_at(r["name"], _origin(r), sets, position))

    def _judged(self, namespace: str) -> tuple[Sequence[ContextState], frozenset[str]]:
        if "\x00" in namespace:  # no context can live there
            return (), frozenset()
        with self.datastore.transaction(commit=False) as cur:
            cur.execute(
                "SELECT 0 AS part, c.name, c.doc::text AS doc, c.created_position AS position,"
                " o.created_position AS origin, o.member_created, NULL::text[] AS collections"
                " FROM context_catalog c LEFT JOIN collection_origins o"
                " ON o.namespace = c.namespace AND o.name = c.name"
                " WHERE c.namespace = %s AND c.live"
                " UNION ALL SELECT 1, NULL, NULL, s.position, NULL, NULL, s.collections"
                " FROM collection_admission_sets s WHERE s.namespace = %s"
                " ORDER BY part, name", (namespace, _bytes(namespace)), prepare=True)
            rows = cur.fetchall()
        states = [_state.decode(r["doc"]) for r in rows if r["part"] == 0]
        origins = {r["name"]: Origin(r["position"], bool(r["member_created"]))
                   if r["origin"] == r["position"] else None
                   for r in rows if r["part"] == 0}
        sets = [SetInForce(r["position"], tuple(r["collections"]))
                for r in rows if r["part"] == 1]
        return states, frozenset(admitted_names(origins, sets))
