"""Request bodies as strict msgspec Structs (camelCase on the wire; null means absent)."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec


class _Body(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    pass


class SubjectBody(_Body):
    kind: str | None = None
    name: str | None = None


class StorageBody(_Body):
    backend: str | None = None
    size: str | None = None
    access_mode: str | None = None
    storage_class: str | None = None


class CreateContextRequest(_Body):
    name: str | None = None
    namespace: str | None = None
    type: str | None = None
    storage: StorageBody | None = None


class SetGrantRequest(_Body):
    subject: SubjectBody | None = None
    permissions: list[str] | None = None
    created_at: str | None = None


class ConsumerRequest(_Body):
    subject: SubjectBody | None = None
    kind: str | None = None
    name: str | None = None
    access_mode: str | None = None
    active: bool | None = None
    desired: bool | None = None
    since: str | None = None


class SourceBody(_Body):
    context: str | None = None
    type: str | None = None
    revision: str | None = None


class PublishRevisionRequest(_Body):
    id: str | None = None
    created_at: str | None = None
    operation: str | None = None
    producer: str | None = None
    parameters: dict[str, str] | None = None
    sources: list[SourceBody] | None = None
    files: int | None = None
    bytes: int | None = None


class SpanBody(_Body):
    start: int | None = None
    end: int | None = None


class RecordFieldBody(_Body):
    name: str | None = None
    type: str | None = None
    value: Any = None  # its type is the field's; checked by the domain (agent api 5.1 check 8)
    span: SpanBody | None = None


class QueryRecordBody(_Body):
    id: str | None = None
    context: str | None = None
    type: str | None = None
    revision: str | None = None
    title: str | None = None
    text: str | None = None
    keywords: list[str] | None = None
    source: SourceBody | None = None
    file: str | None = None
    valid_from: str | None = None
    valid_to: str | None = None
    supersedes: list[str] | None = None
    fact_key: str | None = None
    fields: list[RecordFieldBody] | None = None


class PublishQueryIndexRequest(_Body):
    revision: str | None = None
    records: list[QueryRecordBody] | None = None
    upload_id: str | None = None
    part: int | None = None
    parts: int | None = None


class QueryRequest(_Body):
    contexts: list[str] | None = None
    types: list[str] | None = None
    source_contexts: list[str] | None = None
    revisions: list[str] | None = None
    ids: list[str] | None = None
    query: str | None = None
    limit: int | None = None
    cursor: str | None = None


class SetMemberRequest(_Body):
    subject: SubjectBody | None = None
    role: Annotated[str, msgspec.Meta(extra_json_schema={
        "enum": ["owner", "admin", "member", "viewer"]})] | None = None
