"""SQL of the context read models: the write side used by projections, the read side by HTTP."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.domain.context.events import CloneSource, Revision
from context_service.domain.context.state import ContextState
from context_service.domain.events import Subject
from context_service.domain.stream import context_stream
from context_service.projections.audit_log.projection import AuditRow
from context_service.projections.reads import AuditEntry, CatalogEntry, RevisionEntry
from context_service.projections.revision_history.projection import RevisionRow

_enc = msgspec.json.Encoder()
_state = msgspec.json.Decoder(ContextState)
_revision = msgspec.json.Decoder(Revision)
_subject = msgspec.json.Decoder(Subject)


class CatalogSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, tuple[ContextState, int]]:
        self.cur.execute("SELECT stream_id, created_position, doc::text AS doc "
                         "FROM context_catalog WHERE stream_id = ANY(%s)", (list(stream_ids),))
        return {r["stream_id"]: (_state.decode(r["doc"]), r["created_position"])
                for r in self.cur.fetchall()}

    def save(self, rows: list[tuple[uuid.UUID, ContextState, int]]) -> None:
        ids = [sid for sid, _, _ in rows]
        self.cur.execute(
            "INSERT INTO context_catalog (stream_id, namespace, name, live, created_position, doc)"
            " SELECT a, b, c, d, e, f::jsonb FROM unnest(%b::uuid[], %b::text[], %b::text[],"
            " %b::bool[], %b::int8[], %b::text[]) AS t(a, b, c, d, e, f)"
            " ON CONFLICT (stream_id) DO UPDATE SET live = EXCLUDED.live,"
            " created_position = EXCLUDED.created_position, doc = EXCLUDED.doc",
            (ids, [st.namespace for _, st, _ in rows], [st.name for _, st, _ in rows],
             [st.live for _, st, _ in rows], [c for _, _, c in rows],
             [_enc.encode(st).decode() for _, st, _ in rows]))
        self.cur.execute("DELETE FROM context_grants WHERE stream_id = ANY(%s)", (ids,))
        grantees = [(sid, subject) for sid, st, _ in rows if st.live
                    for subject in sorted({g.subject.key for g in st.grants})]
        if grantees:  # subjects as UTF-8 bytes, keyed by their hash (any length)
            self.cur.execute(
                "INSERT INTO context_grants (stream_id, subject)"
                " SELECT * FROM unnest(%b::uuid[], %b::bytea[])",
                ([g[0] for g in grantees], [g[1].encode() for g in grantees]))


class RevisionSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def append(self, rows: list[RevisionRow]) -> None:
        self.cur.execute(
            "INSERT INTO revision_history (stream_id, position, seq, doc)"
            " SELECT a, b, c, d::jsonb FROM unnest(%b::uuid[], %b::int8[], %b::int4[], %b::text[])"
            " AS t(a, b, c, d)",
            ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
             [_enc.encode(r[3]).decode() for r in rows]))


class AuditSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def append(self, rows: list[AuditRow]) -> None:
        self.cur.execute(
            "INSERT INTO audit_log (stream_id, position, seq, time, action, subject, target)"
            " SELECT a, b, c, d, e, f::jsonb, g::jsonb FROM unnest(%b::uuid[], %b::int8[],"
            " %b::int4[], %b::timestamptz[], %b::text[], %b::text[], %b::text[])"
            " AS t(a, b, c, d, e, f, g)",
            ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
             [r[3] for r in rows], [r[4] for r in rows],
             [_enc.encode(r[5]).decode() for r in rows],
             [_enc.encode(r[6]).decode() if r[6] is not None else None for r in rows]))


class ContextReadsSql:
    """The read port over the tables above."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def get(self, namespace: str, name: str, history: bool = True) -> CatalogEntry | None:
        if "\x00" in namespace + name:  # cannot name anything PostgreSQL text can hold
            return None
        doc = "doc" if history else "(doc - 'revisions')"  # left in the database, not sent
        with self.datastore.transaction(commit=False) as cur:
            cur.execute(f"SELECT created_position, {doc}::text AS doc FROM context_catalog "
                        "WHERE stream_id = %s AND live",
                        (context_stream(namespace, name).id,))
            row = cur.fetchone()
        return None if row is None else CatalogEntry(_state.decode(row["doc"]),
                                                     row["created_position"])

    def list(self, namespace: str, subject: Subject | None) -> Sequence[ContextState]:
        if "\x00" in namespace:
            return []
        with self.datastore.transaction(commit=False) as cur:
            if subject is None:
                cur.execute("SELECT doc::text AS doc FROM context_catalog "
                            "WHERE namespace = %s AND live ORDER BY name", (namespace,))
            else:
                cur.execute(
                    "SELECT c.doc::text AS doc FROM context_catalog c WHERE c.namespace = %(ns)s"
                    " AND c.live AND EXISTS (SELECT 1 FROM context_grants g"
                    " WHERE g.stream_id = c.stream_id AND sha256(g.subject) = sha256(%(s)s)"
                    " AND g.subject = %(s)s) ORDER BY c.name",
                    {"ns": namespace, "s": subject.key.encode()})
            return [_state.decode(r["doc"]) for r in cur.fetchall()]

    def clones_of(self, namespace: str, context: str) -> Sequence[CloneSource]:
        """Through ``context_catalog_clones`` (migration 0021): the clones' provenance only."""
        if "\x00" in namespace + context:
            return []
        with self.datastore.transaction(commit=False) as cur:
            cur.execute(
                "SELECT doc -> 'clone_of' ->> 'snapshot' AS snapshot,"
                " doc -> 'clone_of' ->> 'revision' AS revision FROM context_catalog"
                " WHERE namespace = %(ns)s AND live"
                " AND md5(doc -> 'clone_of' ->> 'context') = md5(%(c)s)"
                " AND doc -> 'clone_of' ->> 'context' = %(c)s ORDER BY name",
                {"ns": namespace, "c": context})
            return [CloneSource(context, r["snapshot"], r["revision"] or "")
                    for r in cur.fetchall()]

    def revisions(self, namespace: str, name: str, since: int, after: tuple[int, int],
                  limit: int, through: tuple[int, int] | None = None,
                  ) -> Sequence[RevisionEntry]:
        with self.datastore.transaction(commit=False) as cur:
            _keyset_page(cur, "position, seq, doc::text AS doc", "revision_history",
                         context_stream(namespace, name).id, since, after, limit, through)
            return [RevisionEntry(r["position"], r["seq"], _revision.decode(r["doc"]))
                    for r in cur.fetchall()]

    def revisions_last(self, namespace: str, name: str, since: int) -> tuple[int, int] | None:
        with self.datastore.transaction(commit=False) as cur:
            return _keyset_last(cur, "revision_history", context_stream(namespace, name).id,
                                since)

    def audit(self, namespace: str, name: str, since: int, after: tuple[int, int], limit: int,
              through: tuple[int, int] | None = None) -> Sequence[AuditEntry]:
        with self.datastore.transaction(commit=False) as cur:
            _keyset_page(cur, "position, seq, time, action, subject::text AS subject,"
                         " target::text AS target", "audit_log",
                         context_stream(namespace, name).id, since, after, limit, through)
            return [AuditEntry(r["position"], r["time"], r["action"], _subject.decode(r["subject"]),
                               _subject.decode(r["target"]) if r["target"] else None, r["seq"])
                    for r in cur.fetchall()]

    def audit_last(self, namespace: str, name: str, since: int) -> tuple[int, int] | None:
        with self.datastore.transaction(commit=False) as cur:
            return _keyset_last(cur, "audit_log", context_stream(namespace, name).id, since)


# The rows of the generation created at ``since``: before the next one's creation, if the name
# was deleted and created again since the caller's check (the catalog and the histories are
# written in one transaction, so this statement sees both as of one moment). Without it the
# rows of a generation created a moment after the check were read with the old one's grants.
_GENERATION = (" AND position < COALESCE((SELECT c.created_position FROM context_catalog c"
               " WHERE c.stream_id = %s AND c.created_position > %s), 9223372036854775807)")


def _keyset_page(cur: Any, columns: str, table: str, stream_id: uuid.UUID, since: int,
                 after: tuple[int, int], limit: int, through: tuple[int, int] | None) -> None:
    """Run the query of a keyset page of ``table`` (a history keyed (stream_id, position,
    seq)) on the primary key's order, walked in that order from ``after``: without statistics
    on the stream (rows just written, as an adoption's many are) the planner expects a few
    rows and would gather every remaining row of the context into a bitmap and sort it for
    each page, so reading a long history a page at a time would cost in proportion to its
    square (measured on the audit: a page from the start of 200,000 entries 77 ms, walked
    0.5 ms). ``table`` and ``columns`` are this module's constants, never a caller's text."""
    sql = (f"SELECT {columns} FROM {table} WHERE stream_id = %s AND position >= %s"
           + _GENERATION + " AND (position, seq) > (%s, %s)")
    params: list[object] = [stream_id, since, stream_id, since, after[0], after[1]]
    if through is not None:
        sql += " AND (position, seq) <= (%s, %s)"
        params += [through[0], through[1]]
    sql += " ORDER BY position, seq LIMIT %s"
    params.append(limit)
    cur.execute("SET LOCAL enable_bitmapscan = off")
    cur.execute(sql, params)


def _keyset_last(cur: Any, table: str, stream_id: uuid.UUID, since: int,
                 ) -> tuple[int, int] | None:
    """The (position, seq) of the newest row of the generation starting at ``since``."""
    cur.execute(f"SELECT position, seq FROM {table} WHERE stream_id = %s AND position >= %s"
                + _GENERATION + " ORDER BY position DESC, seq DESC LIMIT 1",
                (stream_id, since, stream_id, since))
    row = cur.fetchone()
    return None if row is None else (row["position"], row["seq"])
