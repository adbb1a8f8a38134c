"""Answering a checked plan (§10.4) from a field source: its rows with cited cells, its
aggregates and coverage lines, keys in the response's order; and the reference row order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from context_service.domain.fields.citation import cited
from context_service.domain.fields.coverage import coverage_lines
from context_service.domain.fields.plan import Plan
from context_service.domain.fields.source import Cite, FieldSource
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
    page = source.page(plan)
    out: Json = {"documents": source.documents, "matched": page.matched,
                 "fields": [{"name": n, "type": catalog[n].type} for n in plan.fields]}
    rows: list[Json] = []
    if plan.fields:
        rows = [{"documentId": d, "values": [cell(page.columns[n].get(d), cite)
                                             for n in plan.fields]}
                for d in page.documents]
    out["rows"] = rows
    out["rowCount"] = len(rows)
    out["truncated"] = len(rows) < page.matched if plan.fields else False
    if plan.aggregate:
        out["aggregates"] = source.aggregates(plan, cite)
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
