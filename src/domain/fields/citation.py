"""The live citation check (§10.1) given what the head holds for the stating record."""

from __future__ import annotations

from typing import Any

from context_service.domain.fields.values import Stated


def citation(stated: Stated, text_now: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """``text_now``: the record's current text in its collection's current usable index, None
    when the record is gone or no longer readable."""
    if stated.span is None:
        return None, "no_span"
    if text_now is None:
        return None, "record_unavailable"
    start, end = stated.span
    if text_now[start:end] != stated.quote or end > len(text_now):
        return None, "span_changed"
    return {"recordId": stated.record_id, "documentId": stated.document_id, "start": start,
            "end": end, "quote": stated.quote}, None


def cited(out: dict[str, Any], stated: Stated, cite: Any) -> dict[str, Any]:
    """``out`` with ``recordId``, ``citation`` and, when uncited, ``uncitedReason`` added."""
    found, reason = cite(stated)
    out["recordId"] = stated.record_id
    out["citation"] = found
    if reason is not None:
        out["uncitedReason"] = reason
    return out
