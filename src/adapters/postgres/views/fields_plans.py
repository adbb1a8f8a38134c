"""The field plans over ``agent_data`` (§10.4): a plan's rows in one statement (filters, sort,
limit and the rows' values), its aggregates pushed into the database, and each context's
current usable index."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from eventsourcing.postgres import PostgresDatastore

from context_service.adapters.postgres.views.fields_aggregates import aggregates
from context_service.adapters.postgres.views.fields_sql import (
    ORDER_COLUMNS,
    columns,
    matched_sql,
    stated_of,
    stating,
    text,
    utf8,
)
from context_service.domain.fields.plan import Filter, Plan
from context_service.domain.fields.source import Cite, Json, Page
from context_service.domain.fields.values import Stated


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


class SqlFieldSource:
    """A ``FieldSource`` over one usable index of the table, on one read transaction: a plan's
    rows in one statement, its aggregates in another. Statements are planned for their actual
    parameters each time (never a generic cached plan, whose estimates ignore the names)."""

    def __init__(self, cur: Any, publication: int, documents: int) -> None:
        self.cur = cur
        self.publication = publication
        self.documents = documents
        self._catalog: dict[str, Info] | None = None

    def catalog(self) -> dict[str, Info]:
        if self._catalog is None:
            self.cur.execute("SELECT name, type, documents, currencies FROM"
                             " agent_data.field_names WHERE publication = %s",
                             (self.publication,))
            self._catalog = {r["name"]: Info(r["name"], r["type"], r["documents"],
                                             tuple(r["currencies"]))
                             for r in self.cur.fetchall()}
        return self._catalog

    def types(self) -> dict[str, str]:
        return {n: i.type for n, i in self.catalog().items()}

    def plan_sql(self, filters: Sequence[Filter]) -> tuple[str, list[Any]]:
        """The matched documents' keys as one statement (also what the benchmark compares)."""
        return matched_sql(self.publication, filters, self.types())

    def page_sql(self, plan: Plan) -> tuple[str, list[Any]]:
        """One statement: the matched count, then the rows' documents in order (``rank``) with
        their requested fields' stating rows (``name`` null when they state none)."""
        matched, args = self.plan_sql(plan.filters)
        p = self.publication
        order, join = "m.document_key", ""
        if plan.sort_field is not None:
            type_ = self.types()[plan.sort_field]
            direction = " DESC" if plan.descending else ""
            keys = ", ".join(f"s.{c}{direction}" for c in ORDER_COLUMNS[type_])
            order = f"s.document_key IS NULL, {keys}, m.document_key"
            join = (" LEFT JOIN agent_data.fields s ON s.document_key = m.document_key AND "
                    + stating("s", type_))
            args += [p, plan.sort_field]
        sql = (f"WITH matched AS MATERIALIZED ({matched}),"
               f" page AS MATERIALIZED (SELECT m.document_key,"
               f" row_number() OVER (ORDER BY {order}) AS rank FROM matched m{join}"
               f" ORDER BY {order} LIMIT %s)"
               f" SELECT c.n, p.rank, p.document_key AS page_key, f.name, {columns('f')}"
               " FROM (SELECT count(*) AS n FROM matched) c LEFT JOIN page p ON true"
               " LEFT JOIN agent_data.fields f ON f.document_key = p.document_key"
               " AND f.publication = %s AND f.stating AND f.name = ANY(%s)"
               " ORDER BY p.rank")
        args += [plan.limit if plan.fields else 0, p, list(dict.fromkeys(plan.fields))]
        return sql, args

    def page(self, plan: Plan) -> Page:
        sql, args = self.page_sql(plan)
        self.cur.execute(sql, args, binary=True, prepare=False)
        found = self.cur.fetchall()
        chosen: dict[str, None] = {}
        columns_: dict[str, dict[str, Stated]] = {n: {} for n in plan.fields}
        for r in found:
            if r["rank"] is None:
                continue
            chosen[text(r["page_key"])] = None
            if r["name"] is not None:
                value = stated_of(r)
                columns_[r["name"]][value.document_id] = value
        return Page(found[0]["n"], list(chosen), columns_)

    def aggregates(self, plan: Plan, cite: Cite) -> Json:
        matched, args = self.plan_sql(plan.filters)
        return aggregates(self.cur, self.publication, (matched, args), plan, self.types(),
                          cite)


class FieldSessionSql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def current(self, namespace: str, name: str) -> Current | None:
        self.cur.execute("SELECT type, usable, publication, documents FROM"
                         " agent_data.field_collections WHERE namespace = %s AND name = %s",
                         (utf8(namespace), name))
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
