"""The body of ``PUT .../query-index`` as a command: records (extended fields included, agent
api 5.1) and the optional upload part (docs/query-index-uploads.md), with the request-level
rules of both; the domain checks run in ``decide``."""

from __future__ import annotations

import re
from datetime import datetime

from context_service.contract.query import (
    IndexFieldRequest,
    IndexRecordRequest,
    PublishQueryIndexRequest,
)
from context_service.domain.context.commands import PublishQueryIndex
from context_service.domain.context.events import FieldSpan, QueryRecord, RecordField, SourceRef
from context_service.domain.context.index_upload import MAX_PARTS, UploadPart
from context_service.domain.errors import RequestInvalidError
from context_service.domain.events import Subject
from context_service.domain.values import parse_timestamp

UPLOAD_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_NO_SOURCE = SourceRef("", "", "")


def publish_command(actor: Subject, req: PublishQueryIndexRequest) -> PublishQueryIndex:
    records = req.records or []
    converted = tuple(_record(body, index) for index, body in enumerate(records))
    return PublishQueryIndex(actor=actor, revision=req.revision or "", records=converted,
                             upload=_upload(req),
                             blank_fact_key=any(r.fact_key == "" for r in records))


def _upload(req: PublishQueryIndexRequest) -> UploadPart | None:
    given = (req.upload_id, req.part, req.parts)
    if all(value is None for value in given):
        return None
    if req.upload_id is None or req.part is None or req.parts is None:
        raise RequestInvalidError("uploadId, part and parts are required together")
    if UPLOAD_ID.fullmatch(req.upload_id) is None:
        raise RequestInvalidError("uploadId must match ^[A-Za-z0-9._-]{1,64}$")
    if not 1 <= req.parts <= MAX_PARTS:
        raise RequestInvalidError(f"parts must be between 1 and {MAX_PARTS}")
    if not 1 <= req.part <= req.parts:
        raise RequestInvalidError("part must be between 1 and parts")
    return UploadPart(req.upload_id, req.part, req.parts)


def _record(body: IndexRecordRequest, index: int) -> QueryRecord:
    source = body.source
    return QueryRecord(
        id=body.id or "", context=body.context or "", type=body.type or "",
        revision=body.revision or "", text=body.text or "", title=body.title or "",
        keywords=tuple(body.keywords) if body.keywords else (),
        source=SourceRef(source.context or "", source.type or "", source.revision or "")
        if source is not None else _NO_SOURCE,
        file=body.file or "",
        valid_from=_time(body.valid_from, index, "validFrom"),
        valid_to=_time(body.valid_to, index, "validTo"),
        supersedes=tuple(body.supersedes) if body.supersedes else (),
        fact_key=body.fact_key or "",
        fields=tuple(_field(f) for f in body.fields) if body.fields else ())


def _time(value: str | None, index: int, name: str) -> datetime | None:
    if value is None:
        return None
    parsed = parse_timestamp(value)
    if parsed is None:
        raise RequestInvalidError(
            f'{name} must be an RFC 3339 timestamp with a zone at "$.records[{index}].{name}"')
    return parsed


def _field(body: IndexFieldRequest) -> RecordField:
    span = body.span
    return RecordField(
        name=body.name or "", type=body.type or "", value=body.value,
        span=None if span is None else FieldSpan(
            -1 if span.start is None else span.start, -1 if span.end is None else span.end))
