"""SQL of ``passage_features`` and ``agent_data``: bulk writes by binary COPY (a vector goes as
pgvector's binary form, so no text is formatted or parsed per number), hash lists sent in
binary."""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from context_service.adapters.postgres.views.published import index_records
from context_service.domain.context.events import QueryRecord
from context_service.domain.stream import Recorded
from context_service.projections.agent_data.view import AgentCollection, DocumentRow, PassageRow
from context_service.projections.passage_features.features import Feature

DIM = 256
_HEADER = struct.pack(">HH", DIM, 0)  # pgvector's binary form: dimensions, unused, floats


def pg_vector(vector: bytes | None) -> bytes | None:
    return None if vector is None else _HEADER + vector


def from_pg_vector(value: Any) -> bytes | None:
    """A vector read back in binary (a query run with ``binary=True``): its float32 part."""
    return None if value is None else bytes(value)[4:]



class _Published:
    cur: Any

    def records(self, recorded: Recorded) -> tuple[QueryRecord, ...]:
        return index_records(self.cur, recorded)


class PassageFeaturesSql(_Published):
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def known(self, hashes: Iterable[bytes]) -> dict[bytes, bool]:
        # hashes sent in binary: as text, each would be hex-escaped one by one
        # a vector without its pieces (stored before migration 0018) is computed again
        self.cur.execute("SELECT hash, embedding IS NOT NULL AND pieces IS NOT NULL AS embedded"
                         " FROM passage_features WHERE hash = ANY(%b)", (list(hashes),))
        return {bytes(r["hash"]): r["embedded"] for r in self.cur.fetchall()}

    def features(self, hashes: Iterable[bytes]) -> dict[bytes, Feature]:
        # binary results: a vector arrives as pgvector's binary form, no floats parsed
        self.cur.execute("SELECT hash, tokens, embedding FROM passage_features"
                         " WHERE hash = ANY(%b)", (list(hashes),), binary=True)
        return {bytes(r["hash"]): Feature(r["tokens"], from_pg_vector(r["embedding"]))
                for r in self.cur.fetchall()}

    def store(self, features: Mapping[bytes, Feature]) -> None:
        self.cur.execute("CREATE TEMP TABLE IF NOT EXISTS passage_features_new"
                         " (LIKE passage_features) ON COMMIT DELETE ROWS")
        with self.cur.copy("COPY passage_features_new (hash, tokens, embedding, pieces)"
                           " FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["bytea", "int4", "bytea", "bytea"])
            for key, feature in features.items():
                copy.write_row((key, feature.tokens, pg_vector(feature.vector), feature.pieces))
        # a text stored before its vector or its pieces were (migration 0018) gains them
        self.cur.execute(
            "INSERT INTO passage_features SELECT * FROM passage_features_new"
            " ON CONFLICT (hash) DO UPDATE SET"
            " embedding = COALESCE(passage_features.embedding, EXCLUDED.embedding),"
            " pieces = COALESCE(passage_features.pieces, EXCLUDED.pieces)"
            " WHERE (passage_features.embedding IS NULL AND EXCLUDED.embedding IS NOT NULL)"
            " OR (passage_features.pieces IS NULL AND EXCLUDED.pieces IS NOT NULL)")
        self.cur.execute("TRUNCATE passage_features_new")


class AgentDataSql(PassageFeaturesSql):
    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, AgentCollection]:
        self.cur.execute(
            "SELECT stream_id, namespace, name, type, current_revision, index_revision,"
            " publication FROM agent_collections WHERE stream_id = ANY(%s)", (list(stream_ids),))
        return {r["stream_id"]: AgentCollection(
            namespace=bytes(r["namespace"]).decode("utf-8", "surrogatepass"), name=r["name"],
            type=r["type"], current_revision=r["current_revision"],
            index_revision=r["index_revision"], publication=r["publication"])
            for r in self.cur.fetchall()}

    def save(self, stream_id: uuid.UUID, collection: AgentCollection) -> None:
        self.cur.execute(
            "INSERT INTO agent_collections (stream_id, namespace, name, type, current_revision,"
            " index_revision, publication, usable) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (stream_id) DO UPDATE SET namespace = EXCLUDED.namespace,"
            " name = EXCLUDED.name, type = EXCLUDED.type,"
            " current_revision = EXCLUDED.current_revision,"
            " index_revision = EXCLUDED.index_revision, publication = EXCLUDED.publication,"
            " usable = EXCLUDED.usable",
            (stream_id, collection.namespace.encode("utf-8", "surrogatepass"), collection.name,
             collection.type, collection.current_revision, collection.index_revision,
             collection.publication, collection.usable))
        # the agent schema's copy, with the counts of the index stored just before (spec 11.3)
        self.cur.execute(
            "INSERT INTO agent_data.collections (stream_id, namespace, collection_id, type,"
            " revision, publication, usable, documents, passages)"
            " VALUES (%(s)s, %(n)s, %(c)s, %(t)s, %(r)s, %(p)s, %(u)s,"
            " (SELECT count(*) FROM agent_data.documents WHERE publication = %(p)s),"
            " (SELECT count(*) FROM agent_data.passages WHERE publication = %(p)s))"
            " ON CONFLICT (stream_id) DO UPDATE SET namespace = EXCLUDED.namespace,"
            " collection_id = EXCLUDED.collection_id, type = EXCLUDED.type,"
            " revision = EXCLUDED.revision, publication = EXCLUDED.publication,"
            " usable = EXCLUDED.usable, documents = EXCLUDED.documents,"
            " passages = EXCLUDED.passages",
            {"s": stream_id, "n": collection.namespace.encode("utf-8", "surrogatepass"),
             "c": collection.name, "t": collection.type, "r": collection.index_revision,
             "p": collection.publication, "u": collection.usable})

    def remove(self, stream_id: uuid.UUID, publication: int) -> None:
        if publication:
            self.drop_index(publication)
        self.cur.execute("DELETE FROM agent_collections WHERE stream_id = %s", (stream_id,))
        self.cur.execute("DELETE FROM agent_data.collections WHERE stream_id = %s",
                         (stream_id,))

    def drop_index(self, publication: int) -> None:
        self.cur.execute("DELETE FROM agent_vectors WHERE publication = %s", (publication,))
        self.cur.execute("DELETE FROM agent_passages WHERE publication = %s", (publication,))
        self.cur.execute("DELETE FROM agent_documents WHERE publication = %s", (publication,))
        self.cur.execute("DELETE FROM agent_data.passages WHERE publication = %s",
                         (publication,))
        self.cur.execute("DELETE FROM agent_data.documents WHERE publication = %s",
                         (publication,))

    def store_features(self, features: Mapping[bytes, Feature]) -> None:
        self.store(features)

    def store_index(self, publication: int, passages: Sequence[PassageRow],
                    documents: Sequence[DocumentRow]) -> None:
        with self.cur.copy("COPY agent_passages (publication, ord, collection, record_id,"
                           " document_id, text_hash, tokens, valid_from, valid_to, fact_key,"
                           " embedding) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int4", "text", "bytea", "bytea", "bytea", "int4",
                            "timestamptz", "timestamptz", "bytea", "bytea"])
            for p in passages:
                copy.write_row((publication, p.ord, p.collection, _utf8(p.record_id),
                                _utf8(p.document_id), p.text_hash, p.tokens, p.valid_from,
                                p.valid_to, _utf8(p.fact_key), pg_vector(p.embedding)))
        with self.cur.copy("COPY agent_documents (publication, document_id, text_hash, tokens,"
                           " passages) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "bytea", "bytea", "int4", "int4"])
            for d in documents:
                copy.write_row((publication, _utf8(d.document_id), d.text_hash, d.tokens,
                                d.passages))
        # the vector list's candidates are scanned in half precision (migration 0014)
        self.cur.execute("INSERT INTO agent_vectors (publication, ord, embedding)"
                         " SELECT publication, ord, embedding::halfvec(256) FROM agent_passages"
                         " WHERE publication = %s AND embedding IS NOT NULL", (publication,))
        self._store_agent_schema(publication, passages, documents)

    def _store_agent_schema(self, publication: int, passages: Sequence[PassageRow],
                            documents: Sequence[DocumentRow]) -> None:
        """The rows of ``agent.passages`` and ``agent.documents`` (absent values NULL)."""
        collection = passages[0].collection if passages else ""
        with self.cur.copy("COPY agent_data.passages (publication, ordinal, collection_id,"
                           " document_id, record_id, title, text, keywords, valid_from,"
                           " valid_to, supersedes, fact_key, tokens) FROM STDIN"
                           " (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "int4", "text", "text", "text", "text", "text", "text[]",
                            "timestamptz", "timestamptz", "text[]", "text", "int4"])
            for p in passages:
                copy.write_row((publication, p.ord, p.collection, _text(p.document_id),
                                _text(p.record_id), _text(p.title) or None, _text(p.text),
                                [_text(k) for k in p.keywords], p.valid_from, p.valid_to,
                                [_text(s) for s in p.supersedes], _text(p.fact_key) or None,
                                p.tokens))
        with self.cur.copy("COPY agent_data.documents (publication, collection_id,"
                           " document_id, file, passages, tokens) FROM STDIN"
                           " (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "text", "text", "text", "int4", "int4"])
            for d in documents:
                copy.write_row((publication, collection, _text(d.document_id),
                                _text(d.file) or None, d.passages, d.tokens))


def _text(value: str) -> str:
    """``value`` as PostgreSQL text holds it: NUL (which text cannot hold) and lone surrogates
    become U+FFFD."""
    return value.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _utf8(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")
