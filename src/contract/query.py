"""Query indexes and the memory and knowledge query (``PUT .../query-index``,
``POST /v1/namespaces/{namespace}/query``): requests and answers as msgspec Structs.

The query index stores any string (U+0000 included), so its strings are documented plain.
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import UNSET, UnsetType

from context_service.contract.base import Closed, Request, doc, one_of
from context_service.contract.contexts import SourceRef
from context_service.contract.values import TEXT, Digest, Name, Stamp, Timestamp

MAX_PARTS = 10_000  # the parts of one upload (docs/query-index-uploads.md)
FIELD_TYPES = ("number", "money", "date", "boolean", "text")
# the value each type of extended field holds (agent api 5.1)
FIELD_VALUES: dict[str, dict[str, Any]] = {
    "number": {"type": "number"},
    "money": {"type": "object", "additionalProperties": False,
              "required": ["amount", "currency"], "properties": {
                  "amount": {"type": "string", "pattern": "^-?[0-9]{1,20}(\\.[0-9]{1,18})?$"},
                  "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}}},
    "date": {"type": "string", "format": "date", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
    "boolean": {"type": "boolean"},
    "text": {"type": "string", "maxLength": 1000},
}
UPLOAD_KEYS = ("uploadId", "part", "parts")

# --- requests ---------------------------------------------------------------------------------


class IndexSpanRequest(Request, kw_only=True):
    REQUIRED = ("start", "end")
    start: Annotated[int, doc(minimum=0)] | None = None
    end: Annotated[int, doc(minimum=1)] | None = None


class IndexFieldRequest(Request, kw_only=True):
    """An extended field of a record: its value is of the field's type."""

    REQUIRED = ("name", "type", "value")
    EXTRA = {"oneOf": [{"properties": {"type": {"const": kind}, "value": value}}
                       for kind, value in FIELD_VALUES.items()]}
    name: Annotated[str, doc(pattern="^[a-z][a-z0-9_]{0,62}$")] | None = None
    type: Annotated[str, one_of(*FIELD_TYPES)] | None = None
    value: Any = None  # its type is the field's; checked by the domain (agent api 5.1 check 8)
    span: IndexSpanRequest | None = None


class IndexSourceRequest(Request, kw_only=True):
    context: str | None = None
    type: str | None = None
    revision: str | None = None


class IndexRecordRequest(Request, kw_only=True):
    REQUIRED = ("id", "context", "type", "revision", "text")
    id: Annotated[str, doc(minLength=1)] | None = None
    context: Name | None = None
    type: Annotated[str, one_of("memory", "knowledge")] | None = None
    revision: Digest | None = None
    text: Annotated[str, doc(pattern="\\S")] | None = None
    title: str | None = None
    keywords: list[str] | None = None
    source: IndexSourceRequest | None = None
    file: str | None = None
    valid_from: Timestamp | None = None
    valid_to: Timestamp | None = None
    supersedes: Annotated[list[Annotated[str, doc(minLength=1)]],
                          doc("ids of other records of the context", uniqueItems=True)
                          ] | None = None
    fact_key: Annotated[str, doc(minLength=1, maxLength=200, pattern="\\S")] | None = None
    fields: Annotated[list[IndexFieldRequest],
                      doc("distinct names; one type per name across the index", maxItems=50)
                      ] | None = None


class PublishQueryIndexRequest(Request, kw_only=True):
    """The whole index in one body, or one part of a multi-part upload (uploadId, part and
    parts together; part at most parts; the index becomes current when the last missing part
    arrives; a part's records must encode to at most 960 KiB). See
    docs/query-index-uploads.md."""

    REQUIRED = ("revision", "records")
    EXTRA = {"dependentRequired": {key: [k for k in UPLOAD_KEYS if k != key]
                                   for key in UPLOAD_KEYS}}
    revision: Digest | None = None
    records: list[IndexRecordRequest] | None = None
    upload_id: Annotated[str, doc(pattern="^[A-Za-z0-9._-]{1,64}$")] | None = None
    part: Annotated[int, doc(minimum=1, maximum=MAX_PARTS)] | None = None
    parts: Annotated[int, doc(minimum=1, maximum=MAX_PARTS)] | None = None


class QueryRequest(Request, kw_only=True):
    """``POST /v1/namespaces/{namespace}/query``: a query or ids, or both."""

    EXTRA = {"anyOf": [{"required": ["query"], "properties": {"query": TEXT}},
                       {"required": ["ids"], "properties": {"ids": {"minItems": 1}}}]}
    contexts: list[str] | None = None
    types: list[str] | None = None
    source_contexts: list[str] | None = None
    revisions: list[str] | None = None
    ids: list[str] | None = None
    query: str | None = None
    limit: Annotated[int, doc(minimum=0, maximum=100)] | None = None
    cursor: Annotated[str, doc("a nextCursor of this request")] | None = None


# --- answers ----------------------------------------------------------------------------------


class QueryRecordSpan(Closed, kw_only=True):
    start: int
    end: int


class QueryRecordField(Closed, kw_only=True):
    name: str
    type: Annotated[str, one_of(*FIELD_TYPES)]
    value: Any
    span: QueryRecordSpan | UnsetType = UNSET


class QueryRecord(Closed, kw_only=True):
    id: str
    context: str
    type: str
    revision: str
    title: str | UnsetType = UNSET
    text: str
    keywords: list[str] | UnsetType = UNSET
    source: Annotated[SourceRef, doc("always present; its fields may be empty")]
    file: str | UnsetType = UNSET
    valid_from: Stamp | UnsetType = UNSET
    valid_to: Stamp | UnsetType = UNSET
    supersedes: list[str] | UnsetType = UNSET
    fact_key: str | UnsetType = UNSET
    fields: list[QueryRecordField] | UnsetType = UNSET


class QueryResult(Closed, kw_only=True):
    score: Annotated[int, doc(minimum=1)]
    record: QueryRecord


class QueryResponse(Closed, kw_only=True):
    items: list[QueryResult]
    next_cursor: Annotated[str, doc("present when there is a next page")] | UnsetType = UNSET
    unavailable: Annotated[list[str], doc("the contexts whose index does not match their "
                                          "current revision")] | UnsetType = UNSET
