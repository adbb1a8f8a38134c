"""The QueryRecord document of the spec (key order, omitted empty fields), shared by the query
response and the ConfigMap mirror of an index (api 1.7, agent api 5.1)."""

from __future__ import annotations

from typing import Any

from context_service.domain.context.events import QueryRecord, RecordField
from context_service.domain.values import format_timestamp


def record_document(r: QueryRecord) -> dict[str, Any]:
    out: dict[str, Any] = {"id": r.id, "context": r.context, "type": r.type,
                           "revision": r.revision}
    if r.title:
        out["title"] = r.title
    out["text"] = r.text
    if r.keywords:
        out["keywords"] = list(r.keywords)
    out["source"] = {"context": r.source.context, "type": r.source.type,
                     "revision": r.source.revision}
    if r.file:
        out["file"] = r.file
    if r.valid_from is not None:
        out["validFrom"] = format_timestamp(r.valid_from)
    if r.valid_to is not None:
        out["validTo"] = format_timestamp(r.valid_to)
    if r.supersedes:
        out["supersedes"] = list(r.supersedes)
    if r.fact_key:
        out["factKey"] = r.fact_key
    if r.fields:
        out["fields"] = [field_document(f) for f in r.fields]
    return out


def field_document(f: RecordField) -> dict[str, Any]:
    value = f.value
    if f.type == "money" and isinstance(value, dict):
        value = {"amount": value.get("amount"), "currency": value.get("currency")}
    out: dict[str, Any] = {"name": f.name, "type": f.type, "value": value}
    if f.span is not None:
        out["span"] = {"start": f.span.start, "end": f.span.end}
    return out
