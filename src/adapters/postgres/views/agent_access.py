"""SQL of the agent-access read models: members and credentials (write side for projections,
read side for the agent pipeline and the management routes) and the service's secrets."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.domain.agent_credentials.state import Credential
from context_service.domain.events import Subject
from context_service.domain.workspace.state import Member
from context_service.projections.agent_access.projection import MemberChange

_enc = msgspec.json.Encoder()
_credential = msgspec.json.Decoder(Credential)
_member = msgspec.json.Decoder(Member)


class MembersSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def apply(self, changes: Sequence[MemberChange]) -> None:
        final: dict[tuple[str, str], MemberChange] = {}
        for change in changes:  # the last change of a (namespace, subject) wins
            final[(change[0], change[1].key)] = change
        gone = [k for k, c in final.items() if c[2] is None]
        kept = [c for c in final.values() if c[2] is not None]
        if gone:
            self.cur.execute(
                "DELETE FROM workspace_members m USING unnest(%b::bytea[], %b::bytea[])"
                " AS t(ns, s) WHERE m.namespace = t.ns AND sha256(m.subject) = sha256(t.s)"
                " AND m.subject = t.s",
                ([k[0].encode() for k in gone], [k[1].encode() for k in gone]))
        if kept:
            self.cur.execute(
                "INSERT INTO workspace_members (namespace, subject, role, doc)"
                " SELECT * FROM unnest(%b::bytea[], %b::bytea[], %b::text[], %b::text[])"
                " ON CONFLICT (namespace, sha256(subject)) DO UPDATE SET role = EXCLUDED.role,"
                " doc = EXCLUDED.doc",
                ([c[0].encode() for c in kept], [c[1].key.encode() for c in kept],
                 [c[2] for c in kept],
                 [_enc.encode(Member(c[1], c[2] or "", c[3])).decode() for c in kept]))


class CredentialsSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, ids: Sequence[str]) -> dict[str, Credential]:
        self.cur.execute("SELECT id, doc FROM agent_credentials WHERE id = ANY(%s)",
                         (list(ids),))
        return {r["id"]: _credential.decode(r["doc"]) for r in self.cur.fetchall()}

    def save(self, credentials: Sequence[Credential]) -> None:
        self.cur.execute(
            "INSERT INTO agent_credentials (id, namespace, created_at, doc)"
            " SELECT * FROM unnest(%b::text[], %b::bytea[], %b::timestamptz[], %b::text[])"
            " ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc",
            ([c.id for c in credentials], [c.namespace.encode() for c in credentials],
             [c.created_at for c in credentials],
             [_enc.encode(c).decode() for c in credentials]))


class AccessReadsSql:
    """The read port over the tables above."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def credential(self, credential_id: str) -> Credential | None:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc FROM agent_credentials WHERE id = %s",
                        (credential_id,), prepare=True)
            row = cur.fetchone()
        return None if row is None else _credential.decode(row["doc"])

    def credentials(self, namespace: str) -> list[Credential]:
        """Every credential of the workspace, newest first (then by id)."""
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc FROM agent_credentials WHERE namespace = %s"
                        " ORDER BY created_at DESC, id", (namespace.encode(),))
            return [_credential.decode(r["doc"]) for r in cur.fetchall()]

    def role(self, namespace: str, subject: Subject) -> str | None:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT role FROM workspace_members WHERE namespace = %(ns)s"
                        " AND sha256(subject) = sha256(%(s)s) AND subject = %(s)s",
                        {"ns": namespace.encode(), "s": subject.key.encode()}, prepare=True)
            row = cur.fetchone()
        return None if row is None else str(row["role"])

    def members(self, namespace: str) -> list[Member]:
        """Sorted by ``kind:name``, compared as strings (byte order)."""
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT doc FROM workspace_members WHERE namespace = %s"
                        " ORDER BY subject", (namespace.encode(),))
            return [_member.decode(r["doc"]) for r in cur.fetchall()]


def credential_key(datastore: PostgresDatastore, configured: str) -> bytes:
    """The HMAC key of credential secrets: ``CS_CREDENTIAL_KEY`` when set, else 32 random bytes
    generated at the first start and kept in ``service_secrets`` (shared by every replica)."""
    if configured:
        return configured.encode()
    with datastore.transaction(commit=True) as cur:
        cur.execute("INSERT INTO service_secrets (name, value) VALUES ('credential_key', %s)"
                    " ON CONFLICT (name) DO NOTHING", (secrets.token_bytes(32),))
        cur.execute("SELECT value FROM service_secrets WHERE name = 'credential_key'")
        row = cur.fetchone()
    assert row is not None
    return bytes(row["value"])
