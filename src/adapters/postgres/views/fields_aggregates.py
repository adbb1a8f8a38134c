"""A plan's aggregates (§10.4) computed in PostgreSQL in one statement: the groups (GROUP BY
the key, ranked by count descending then key, null last, cut at 50), then per group what each
function needs — counts, exact ``numeric`` money sums per currency with their largest scale,
the number values for a correctly rounded sum, and the row holding each min/max (smallest
documentId on ties). Only the formatting, and the citations of min/max cells, happen here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_service.adapters.postgres.views.fields_sql import (
    ORDER_COLUMNS,
    VALUE_COLUMNS,
    columns,
    stated_of,
    stating,
    text,
)
from context_service.domain.fields.aggregates import money_avg_of, number_result, plain
from context_service.domain.fields.citation import cited
from context_service.domain.fields.plan import MAX_GROUPS, Function, Plan
from context_service.domain.fields.source import Cite, Json
from context_service.domain.fields.values import Value, value_json

# the group key as one comparable value (-0 and 0 are one number)
_KEY = {"number": "k.number_value + 0::float8", "date": "k.date_value",
        "boolean": "k.boolean_value", "text": "k.text_key"}
_VALUE_TYPES = ("bytea", "bytea", "text", "float8", "numeric", "text", "text", "date", "bool",
                "bytea", "int4", "int4", "bytea")
_EMPTY_ROW = ", ".join(f"NULL::{t}" for t in _VALUE_TYPES)


def _need(fn: Function, type_: str) -> tuple[str, str] | None:
    """What a function reads per group: ``count`` (documents stating the field), ``numbers``
    (their values), ``money`` (sum, count and scale per currency), ``min`` or ``max``."""
    if fn.field is None:
        return None
    if fn.op == "count":
        return "count", fn.field
    if fn.op in ("sum", "avg"):
        return ("money" if type_ == "money" else "numbers"), fn.field
    return fn.op, fn.field


def _branch(need: tuple[str, str], index: int, type_: str) -> str:
    """The rows of one need, as a part of the statement's UNION ALL."""
    kind, _ = need
    join = ("FROM d JOIN agent_data.fields f ON f.document_key = d.document_key AND "
            + stating("f", type_))
    head = f"SELECT {index} AS part, d.rank"
    if kind == "count":
        return (f"{head}, NULL::bigint, count(*), NULL::text, NULL::numeric, NULL::int,"
                f" NULL::float8[], {_EMPTY_ROW} {join} GROUP BY d.rank")
    if kind == "numbers":
        return (f"{head}, NULL::bigint, count(*), NULL::text, NULL::numeric, NULL::int,"
                f" array_agg(f.number_value), {_EMPTY_ROW} {join} GROUP BY d.rank")
    if kind == "money":
        return (f"{head}, NULL::bigint, count(*), f.money_currency, sum(f.money_amount),"
                " max(length(split_part(f.money_text, '.', 2))), NULL::float8[],"
                f" {_EMPTY_ROW} {join} GROUP BY d.rank, f.money_currency")
    per = "d.rank, f.money_currency" if type_ == "money" else "d.rank"
    direction = " DESC" if kind == "max" else ""
    value_order = f"f.{ORDER_COLUMNS[type_][-1]}{direction}"
    return (f"(SELECT DISTINCT ON ({per}) {index} AS part, d.rank, NULL::bigint, NULL::bigint,"
            f" f.money_currency, NULL::numeric, NULL::int, NULL::float8[], {columns('f')}"
            f" {join} ORDER BY {per}, {value_order}, f.document_key)")


def aggregates_sql(publication: int, matched: tuple[str, list[Any]], plan: Plan,
                   types: Mapping[str, str]) -> tuple[str, list[tuple[str, str]], list[Any]]:
    """The statement, the needs in part order, and its arguments."""
    sql, args = matched
    args = list(args)
    if plan.group_by is None:
        grouped = "SELECT m.document_key, NULL::boolean AS key FROM matched m"
    else:
        type_ = types[plan.group_by]
        grouped = (f"SELECT m.document_key, {_KEY[type_]} AS key FROM matched m LEFT JOIN"
                   " agent_data.fields k ON k.document_key = m.document_key AND "
                   + stating("k", type_))
        args += [publication, plan.group_by]
    key_columns = {c: "NULL" for c in VALUE_COLUMNS}
    if plan.group_by is not None:
        key_columns[ORDER_COLUMNS[types[plan.group_by]][0]] = "key"
    keys = ", ".join(f"{v}::{t} AS {c}" for (c, v), t in zip(key_columns.items(), _VALUE_TYPES,
                                                             strict=True))
    statement = (
        f"WITH matched AS MATERIALIZED ({sql}),"
        f" g AS MATERIALIZED ({grouped}),"
        " c AS MATERIALIZED (SELECT key, count(*) AS n, count(*) OVER () AS total,"
        " row_number() OVER (ORDER BY count(*) DESC, key ASC NULLS LAST) AS rank"
        " FROM g GROUP BY key),"
        f" top AS MATERIALIZED (SELECT * FROM c WHERE rank <= {MAX_GROUPS}),"
        " d AS MATERIALIZED (SELECT g.document_key, top.rank FROM g JOIN top ON top.key = g.key"
        " UNION ALL SELECT g.document_key, top.rank FROM g JOIN top ON top.key IS NULL"
        " WHERE g.key IS NULL)"
        " SELECT -1 AS part, rank, total, n, NULL::text AS currency, NULL::numeric AS amount,"
        f" NULL::int AS digits, NULL::float8[] AS numbers, {keys} FROM top")
    needs: list[tuple[str, str]] = []
    for fn in plan.functions:
        need = _need(fn, types[fn.field] if fn.field is not None else "")
        if need is None or need in needs:
            continue
        needs.append(need)
        statement += f" UNION ALL {_branch(need, len(needs) - 1, types[need[1]])}"
        args += [publication, need[1]]
    return statement, needs, args


def aggregates(cur: Any, publication: int, matched: tuple[str, list[Any]], plan: Plan,
               types: Mapping[str, str], cite: Cite) -> Json:
    """The ``aggregates`` object of ``plan`` over the documents ``matched`` selects."""
    sql, needs, args = aggregates_sql(publication, matched, plan, types)
    cur.execute(sql, args, binary=True, prepare=False)
    groups: dict[int, Json] = {}
    total = 0
    found: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in cur.fetchall():
        if r["part"] == -1:
            total = r["total"]
            groups[r["rank"]] = {"key": _key(r, plan, types), "count": r["n"]}
        else:
            found.setdefault((r["part"], r["rank"]), []).append(r)
    if plan.group_by is None and not groups:
        groups[1], total = {"key": None, "count": 0}, 1  # one group, of no documents
    out_groups = []
    for rank in sorted(groups):
        group = groups[rank]
        entry: Json = {"key": group["key"]} if plan.group_by is not None else {}
        entry["count"] = group["count"]
        entry["results"] = [
            _result(fn, group["count"], found, needs, rank, types, cite)
            for fn in plan.functions]
        out_groups.append(entry)
    out: Json = {"groupBy": plan.group_by} if plan.group_by is not None else {}
    out.update({"groups": out_groups, "groupCount": total,
                "groupsTruncated": total > MAX_GROUPS})
    return out


def _key(r: Mapping[str, Any], plan: Plan, types: Mapping[str, str]) -> Any:
    if plan.group_by is None:
        return None
    type_ = types[plan.group_by]
    raw = r[ORDER_COLUMNS[type_][0]]
    if raw is None:
        return None
    value: Value = text(raw) if type_ == "text" else float(raw) if type_ == "number" else raw
    return value_json(value)


def _result(fn: Function, count: int, found: Mapping[tuple[int, int], list[dict[str, Any]]],
            needs: list[tuple[str, str]], rank: int, types: Mapping[str, str],
            cite: Cite) -> Json:
    out: Json = {"op": fn.op}
    if fn.field is None:
        out["value"] = count
        return out
    out["field"] = fn.field
    type_ = types[fn.field]
    need = _need(fn, type_)
    assert need is not None
    rows = found.get((needs.index(need), rank), [])
    if fn.op == "count":
        out["value"] = rows[0]["n"] if rows else 0
    elif type_ == "money":
        out["values"] = [_money(fn.op, r, cite) for r in sorted(rows, key=lambda r:
                                                                 r["currency"])]
    elif fn.op in ("sum", "avg"):
        out["value"] = number_result(fn.op, rows[0]["numbers"] if rows else [])
    elif not rows:
        out["value"] = None
    else:
        best = stated_of(rows[0])
        out["value"] = value_json(best.value)
        out["documentId"] = best.document_id
        cited(out, best, cite)
    return out


def _money(op: str, r: Mapping[str, Any], cite: Cite) -> Json:
    entry: Json = {"currency": r["currency"]}
    if op == "sum":
        entry["amount"] = plain(r["amount"], r["digits"])
    elif op == "avg":
        entry["amount"] = money_avg_of(r["amount"], r["n"], r["digits"])
    else:
        best = stated_of(r)
        entry["amount"] = r["money_text"]
        entry["documentId"] = best.document_id
        cited(entry, best, cite)
    return entry
