"""The QueryRecord document of the spec (key order, omitted empty fields), shared by the query
response and the ConfigMap mirror of an index."""

from __future__ import annotations

from typing import Any

from context_service.domain.context.events import QueryRecord


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
    return out
