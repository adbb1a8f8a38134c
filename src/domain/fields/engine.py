"""Answering a checked plan (§10.4) from a field source: matched documents, sorted rows with
cited cells, aggregates and coverage lines, keys in the response's order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from context_service.domain.fields.aggregates import Cite, aggregate
from context_service.domain.fields.citation import cited
from context_service.domain.fields.coverage import coverage_lines
from context_service.domain.fields.plan import Plan
from context_service.domain.fields.source import FieldSource
from context_service.domain.fields.values import Stated, order_key, value_json

Json = dict[str, Any]


def sort_documents(documents: Sequence[str], keys: Mapping[str, Stated],
                   descending: bool) -> list[str]:
    """By the sort field (documents without a value last, in either direction), then by
    documentId ascending."""
    ordered = sorted(documents)
    valued = [d for d in ordered if d in keys]
    valued.sort(key=lambda d: order_key(keys[d].value), reverse=descending)  # stable
    return valued + [d for d in ordered if d not in keys]


def cell(stated: Stated | None, cite: Cite) -> Json | None:
    if stated is None:
        return None
    return cited({"value": value_json(stated.value)}, stated, cite)


def answer(plan: Plan, source: FieldSource, cite: Cite) -> Json:
    """The response from ``documents`` on (``collectionId`` and ``knownAt`` are the caller's)."""
    catalog = source.catalog()
    matched = source.matched(plan.filters)
    out: Json = {"documents": source.documents, "matched": len(matched),
                 "fields": [{"name": n, "type": catalog[n].type} for n in plan.fields]}
    rows: list[Json] = []
    if plan.fields:
        order = sorted(matched)
        if plan.sort_field is not None:
            order = sort_documents(order, source.values(plan.sort_field, matched),
                                   plan.descending)
        chosen = order[:plan.limit]
        columns = {n: source.values(n, chosen) for n in dict.fromkeys(plan.fields)}
        rows = [{"documentId": d, "values": [cell(columns[n].get(d), cite) for n in plan.fields]}
                for d in chosen]
    out["rows"] = rows
    out["rowCount"] = len(rows)
    out["truncated"] = len(rows) < len(matched) if plan.fields else False
    if plan.aggregate:
        names = {fn.field for fn in plan.functions if fn.field is not None}
        if plan.group_by is not None:
            names.add(plan.group_by)
        values = {n: source.values(n, matched) for n in sorted(names)}
        out["aggregates"] = aggregate(matched, plan.group_by, plan.functions, values,
                                      {n: catalog[n].type for n in names}, cite)
    lines = coverage_lines(((n, catalog[n].documents) for n in plan.named()), source.documents)
    out["coverageLines"] = lines
    out["incomplete"] = bool(lines)
    return out


def listing(source: FieldSource) -> Json:
    """``fields/list`` from ``documents`` on."""
    catalog = source.catalog()
    fields = []
    for name in sorted(catalog):
        info = catalog[name]
        entry: Json = {"name": name, "type": info.type, "documents": info.documents,
                       "coverage": 100 * info.documents // source.documents
                       if source.documents else 0}
        if info.type == "money":
            entry["currencies"] = list(info.currencies)
        fields.append(entry)
    lines = coverage_lines(((n, i.documents) for n, i in catalog.items()), source.documents)
    return {"documents": source.documents, "fields": fields, "coverageLines": lines,
            "incomplete": bool(lines)}
