"""The field plans over ``agent_data`` (§10.4): filters as set operations over the typed
indexes, values of the matched documents, and each context's current usable index."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from eventsourcing.postgres import PostgresDatastore

from context_service.domain.fields.plan import Filter
from context_service.domain.fields.values import Money, Stated, Value, parse

_OPS = {"eq": "=", "ne": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
_COLUMN = {"number": "number_value", "date": "date_value", "boolean": "boolean_value"}
_STATING = ("SELECT document_key FROM agent_data.fields"
            " WHERE publication = %s AND stating AND name = %s")


def _utf8(value: str) -> bytes:
    return value.encode("utf-8", "surrogatepass")


def _text(value: Any) -> str:
    return bytes(value).decode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class Current:
    """A context's current usable index in the table (``publication`` 0: none)."""

    type: str
    publication: int
    documents: int


@dataclass(frozen=True)
class Info:
    name: str
    type: str
    documents: int
    currencies: Sequence[str]


def _predicate(f: Filter, type_: str) -> tuple[str, list[Any]]:
    """The SQL condition on one stating row for a filter other than ``exists``."""
    wanted = parse(type_, f.value)
    if isinstance(wanted, Money):
        if f.op == "ne":
            return ("(money_currency <> %s OR money_amount <> %s)",
                    [wanted.currency, wanted.amount])
        return f"money_currency = %s AND money_amount {_OPS[f.op]} %s", [wanted.currency,
                                                                         wanted.amount]
    if type_ == "text":
        assert isinstance(wanted, str)
        if f.op == "contains":
            return "position(%s in text_lower) > 0", [_utf8(wanted.lower())]
        if f.op == "prefix":
            needle = _utf8(wanted.lower())
            return "substring(text_lower from 1 for %s) = %s", [len(needle), needle]
        return f"text_key {_OPS[f.op]} %s", [_utf8(wanted)]
    return f"{_COLUMN[type_]} {_OPS[f.op]} %s", [wanted]


class SqlFieldSource:
    """A ``FieldSource`` over one usable index of the table, on one read transaction."""

    def __init__(self, cur: Any, publication: int, documents: int) -> None:
        self.cur = cur
        self.publication = publication
        self.documents = documents
        self._catalog: dict[str, Info] | None = None
        # the last matched list and its statement: values of exactly those documents are
        # selected by the statement itself rather than by a list of up to every key
        self._matched: tuple[list[str], str, list[Any]] | None = None

    def catalog(self) -> dict[str, Info]:
        if self._catalog is None:
            self.cur.execute("SELECT name, type, documents, currencies FROM"
                             " agent_data.field_names WHERE publication = %s",
                             (self.publication,))
            self._catalog = {r["name"]: Info(r["name"], r["type"], r["documents"],
                                             tuple(r["currencies"]))
                             for r in self.cur.fetchall()}
        return self._catalog

    def plan_sql(self, filters: Sequence[Filter]) -> tuple[str, list[Any]]:
        """The matched documents' keys as one statement (also what the benchmark compares)."""
        types = {n: i.type for n, i in self.catalog().items()}
        p = self.publication
        kept: list[tuple[str, list[Any]]] = []
        dropped: list[tuple[str, list[Any]]] = []
        for f in filters:
            if f.op == "exists":
                (kept if f.value else dropped).append((_STATING, [p, f.field]))
                continue
            condition, args = _predicate(f, types[f.field])
            kept.append((f"{_STATING} AND {condition}", [p, f.field, *args]))
        if not kept:
            kept.append(("SELECT document_key FROM agent_data.field_documents"
                         " WHERE publication = %s", [p]))
        sql = " INTERSECT ".join(f"({q})" for q, _ in kept)
        args = [a for _, qa in kept for a in qa]
        for q, qa in dropped:
            sql += f" EXCEPT ({q})"
            args += qa
        return sql, args

    def matched(self, filters: Sequence[Filter]) -> list[str]:
        sql, args = self.plan_sql(filters)
        self.cur.execute(sql, args, binary=True)
        found = [_text(r["document_key"]) for r in self.cur.fetchall()]
        self._matched = (found, sql, args) if filters else (found, "", [])
        return found

    def values(self, name: str, documents: Sequence[str]) -> dict[str, Stated]:
        select = ("SELECT document_key, record_key, type, number_value, money_amount,"
                  " money_text, money_currency, date_value, boolean_value, text_key,"
                  " span_start, span_end, quote FROM agent_data.fields"
                  " WHERE publication = %s AND stating AND name = %s")
        if self._matched is not None and documents is self._matched[0]:
            _, sql, args = self._matched
            if sql:
                self.cur.execute(f"WITH matched AS MATERIALIZED ({sql}) {select}"
                                 " AND document_key IN (SELECT document_key FROM matched)",
                                 [*args, self.publication, name], binary=True)
            else:
                self.cur.execute(select, (self.publication, name), binary=True)
        else:
            self.cur.execute(f"{select} AND document_key = ANY(%s)",
                             (self.publication, name, [_utf8(d) for d in documents]),
                             binary=True)
        out = {}
        for r in self.cur.fetchall():
            doc = _text(r["document_key"])
            span = None if r["span_start"] is None else (r["span_start"], r["span_end"])
            out[doc] = Stated(doc, _text(r["record_key"]), _value(r), span,
                              None if r["quote"] is None else _text(r["quote"]))
        return out


def _value(r: dict[str, Any]) -> Value:
    match r["type"]:
        case "number":
            return float(r["number_value"])
        case "money":
            return Money(r["money_amount"], r["money_text"], r["money_currency"])
        case "date":
            return r["date_value"]  # type: ignore[no-any-return]
        case "boolean":
            return bool(r["boolean_value"])
    return _text(r["text_key"])


class FieldSessionSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def current(self, namespace: str, name: str) -> Current | None:
        self.cur.execute("SELECT type, usable, publication, documents FROM"
                         " agent_data.field_collections WHERE namespace = %s AND name = %s",
                         (_utf8(namespace), name))
        row = self.cur.fetchone()
        if row is None:
            return None
        return Current(row["type"], row["publication"] if row["usable"] else 0,
                       row["documents"])

    def source(self, current: Any) -> SqlFieldSource:
        return SqlFieldSource(self.cur, current.publication, current.documents)


class FieldReadsSql:
    """``FieldReads``: one read-only transaction per request."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    @contextmanager
    def session(self) -> Iterator[FieldSessionSql]:
        with self.datastore.transaction(commit=False) as cur:
            yield FieldSessionSql(cur)
