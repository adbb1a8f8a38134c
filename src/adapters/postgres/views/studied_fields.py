"""SQL of ``studied_fields``: the context rows, and each usable index's field rows, documents
and field names written by binary COPY. Text columns get a form PostgreSQL text can hold; the
``*_key`` columns keep the exact UTF-8 bytes the field plans compare."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from datetime import date
from typing import Any

from context_service.adapters.postgres.views.published import index_records, published_at
from context_service.domain.context.events import QueryRecord
from context_service.domain.fields.values import Money
from context_service.domain.stream import Recorded
from context_service.projections.agent_data.view import AgentCollection
from context_service.projections.studied_fields.view import FieldsLayout

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_COLUMNS = ("collection_id, document_id, record_id, name, type, number_value, money_amount,"
            " money_currency, date_value, boolean_value, text_value, span_start, span_end,"
            " namespace, publication, ord, document_key, record_key, text_key, text_lower,"
            " money_text, quote, stating")
_TYPES = ["text", "text", "text", "text", "text", "float8", "numeric", "text", "date", "bool",
          "text", "int4", "int4", "bytea", "int8", "int4", "bytea", "bytea", "bytea", "bytea",
          "text", "bytea", "bool"]


def utf8(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


def storable(value: str) -> str:
    """``value`` with NUL and lone surrogates (which text cannot hold) replaced by U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", value)


class StudiedFieldsSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, AgentCollection]:
        self.cur.execute(
            "SELECT stream_id, namespace, name, type, current_revision, index_revision,"
            " publication FROM agent_data.field_collections WHERE stream_id = ANY(%s)",
            (list(stream_ids),))
        return {r["stream_id"]: AgentCollection(
            namespace=bytes(r["namespace"]).decode("utf-8", "surrogatepass"), name=r["name"],
            type=r["type"], current_revision=r["current_revision"],
            index_revision=r["index_revision"], publication=r["publication"])
            for r in self.cur.fetchall()}

    def save(self, stream_id: uuid.UUID, collection: AgentCollection, documents: int) -> None:
        self.cur.execute(
            "INSERT INTO agent_data.field_collections (stream_id, namespace, name, type,"
            " current_revision, index_revision, publication, usable, documents)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, greatest(%s, 0))"
            " ON CONFLICT (stream_id) DO UPDATE SET namespace = EXCLUDED.namespace,"
            " name = EXCLUDED.name, type = EXCLUDED.type,"
            " current_revision = EXCLUDED.current_revision,"
            " index_revision = EXCLUDED.index_revision, publication = EXCLUDED.publication,"
            " usable = EXCLUDED.usable, documents = CASE WHEN %s < 0"
            " THEN agent_data.field_collections.documents ELSE EXCLUDED.documents END",
            (stream_id, utf8(collection.namespace), collection.name, collection.type,
             collection.current_revision, collection.index_revision, collection.publication,
             collection.usable, documents, documents))

    def remove(self, stream_id: uuid.UUID) -> None:
        self.cur.execute("DELETE FROM agent_data.field_collections WHERE stream_id = %s",
                         (stream_id,))

    def drop_index(self, publication: int) -> None:
        for table in ("fields", "field_documents", "field_names"):
            self.cur.execute(f"DELETE FROM agent_data.{table} WHERE publication = %s",
                             (publication,))

    def store_index(self, publication: int, namespace: str, layout: FieldsLayout) -> None:
        ns = utf8(namespace)
        with self.cur.copy(f"COPY agent_data.fields ({_COLUMNS}) FROM STDIN (FORMAT BINARY)",
                           ) as copy:
            copy.set_types(_TYPES)
            for r in layout.rows:
                v = r.value
                money = v if isinstance(v, Money) else None
                text = v if isinstance(v, str) and not isinstance(v, bool) else None
                copy.write_row((
                    storable(r.collection), storable(r.document_id), storable(r.record_id),
                    r.name, r.type,
                    v if isinstance(v, float) else None,
                    money.amount if money else None, money.currency if money else None,
                    v if isinstance(v, date) else None,
                    v if isinstance(v, bool) else None,
                    storable(text) if text is not None else None,
                    r.span[0] if r.span else None, r.span[1] if r.span else None,
                    ns, publication, r.ord, utf8(r.document_id), utf8(r.record_id),
                    utf8(text) if text is not None else None,
                    utf8(text.lower()) if text is not None else None,
                    money.text if money else None,
                    utf8(r.quote) if r.quote is not None else None, r.stating))
        with self.cur.copy("COPY agent_data.field_documents (publication, document_key)"
                           " FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "bytea"])
            for doc in layout.documents:
                copy.write_row((publication, utf8(doc)))
        with self.cur.copy("COPY agent_data.field_names (publication, name, type, documents,"
                           " currencies) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int8", "text", "text", "int4", "text[]"])
            for n in layout.names:
                copy.write_row((publication, n.name, n.type, n.documents, list(n.currencies)))

    def refresh_statistics(self) -> None:
        # ANALYZE may run in the projection's transaction; it samples the rows just written
        self.cur.execute("ANALYZE agent_data.fields, agent_data.field_documents,"
                         " agent_data.field_names")

    def published(self, position: int) -> Recorded | None:
        return published_at(self.cur, position)

    def records(self, recorded: Recorded) -> tuple[QueryRecord, ...]:
        return index_records(self.cur, recorded)
