"""Named contexts (``/v1/contexts``, ``/v1/namespaces/{namespace}/contexts``) with their grants,
consumers, revisions, audit and history: requests and answers as msgspec Structs, for the
routes, the OpenAPI document and clients.

Answers are ``Closed``: the document lists every key a route writes, in the order it writes
them (``http.render``); a key the route omits when empty is ``UNSET`` here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import UNSET, UnsetType

from context_service.contract.base import Closed, Request, doc, one_of
from context_service.contract.values import (
    Digest,
    Free,
    Int64,
    Kind,
    Label,
    Name,
    Permission,
    Size,
    Stamp,
    Strings,
    Text,
    Timestamp,
)

# --- requests ---------------------------------------------------------------------------------


class StorageRequest(Request, kw_only=True):
    REQUIRED = ("backend", "size", "accessMode")
    backend: Annotated[str, one_of("pvc")] | None = None
    size: Size | None = None
    access_mode: Annotated[str, one_of("ReadWriteOnce", "ReadWriteMany")] | None = None
    storage_class: Free | None = None


class CreateContextRequest(Request, kw_only=True):
    """``POST /v1/contexts``."""

    REQUIRED = ("name", "namespace", "type", "storage")
    name: Name | None = None
    namespace: Label | None = None
    type: Annotated[str, one_of("workspace", "state", "memory", "knowledge",
                                "artifacts")] | None = None
    storage: StorageRequest | None = None


class SubjectRequest(Request, kw_only=True):
    """A subject in a body (spec 2.1.6)."""

    REQUIRED = ("kind", "name")
    kind: Kind | None = None
    name: Text | None = None


# A grant needs ``read`` with write, attach or derive; ``administer`` alone is accepted.
_GRANTED = doc(anyOf=[{"minItems": 1, "uniqueItems": True, "contains": {"const": "read"}},
                      {"const": ["administer"]}])


class SetGrantRequest(Request, kw_only=True):
    """``PUT .../grants``: a Grant; ``createdAt`` may be sent and is ignored."""

    REQUIRED = ("subject", "permissions")
    subject: SubjectRequest | None = None
    permissions: Annotated[list[Permission], _GRANTED] | None = None
    created_at: Timestamp | None = None


class DetachConsumerRequest(Request, kw_only=True):
    """``DELETE .../consumers``: a Consumer; ``since`` and ``desired`` may be sent and are
    overwritten, ``subject`` defaults to the caller."""

    REQUIRED = ("kind", "name")
    subject: SubjectRequest | None = None
    kind: Text | None = None
    name: Text | None = None
    access_mode: Free | None = None
    active: bool | None = None
    desired: bool | None = None
    since: Timestamp | None = None


class AttachConsumerRequest(Request, kw_only=True):
    """``PUT .../consumers``: a Consumer; ``since`` and ``desired`` may be sent and are
    overwritten, ``subject`` defaults to the caller."""

    REQUIRED = ("kind", "name", "accessMode")
    subject: SubjectRequest | None = None
    kind: Text | None = None
    name: Text | None = None
    access_mode: Annotated[str, one_of("readOnly", "readWrite")] | None = None
    active: bool | None = None
    desired: bool | None = None
    since: Timestamp | None = None


class SourceRequest(Request, kw_only=True):
    REQUIRED = ("context", "type", "revision")
    context: Text | None = None
    type: Text | None = None
    revision: Digest | None = None


class PublishRevisionRequest(Request, kw_only=True):
    """``POST .../revisions``."""

    REQUIRED = ("id", "createdAt", "operation")
    id: Digest | None = None
    created_at: Timestamp | None = None
    operation: Text | None = None
    producer: Free | None = None
    parameters: Strings | None = None
    sources: list[SourceRequest] | None = None
    files: Int64 | None = None
    bytes: Int64 | None = None


# --- answers ----------------------------------------------------------------------------------


class Subject(Closed, kw_only=True):
    kind: str
    name: str


class SourceRef(Closed, kw_only=True):
    context: str
    type: str
    revision: str


class Revision(Closed, kw_only=True):
    id: str
    created_at: Stamp
    operation: str
    producer: str | UnsetType = UNSET
    parameters: Strings | UnsetType = UNSET
    sources: list[SourceRef] | UnsetType = UNSET
    files: Int64
    bytes: Int64


class Consumer(Closed, kw_only=True):
    subject: Subject
    kind: str
    name: str
    access_mode: Annotated[str, one_of("readOnly", "readWrite")]
    active: bool
    desired: bool
    since: Stamp


class ContextStorage(Closed, kw_only=True):
    backend: str
    size: str
    access_mode: str
    storage_class: str | UnsetType = UNSET


class Attachment(Closed, kw_only=True):
    kind: Literal["pvc"]
    claim_name: str


class ContextResource(Closed, kw_only=True):
    """A named context as the caller may see it: its effective access and consumers only
    when the route names a caller."""

    name: str
    namespace: str
    type: str
    status: Annotated[str, one_of("provisioning", "ready")]
    storage: ContextStorage
    attachment: Attachment
    current_revision: str | UnsetType = UNSET
    revisions: list[Revision] | UnsetType = UNSET
    effective_access: list[Permission] | UnsetType = UNSET
    consumers: list[Consumer] | UnsetType = UNSET


class ContextList(Closed, kw_only=True):
    items: Annotated[list[ContextResource], doc("the contexts the caller holds any "
                                                "permission on")]


class RevisionList(Closed, kw_only=True):
    items: Annotated[list[Revision], doc("oldest first")]


class Grant(Closed, kw_only=True):
    subject: Subject
    permissions: Annotated[list[str], doc("in the order the client sent them")]
    created_at: Stamp


class GrantList(Closed, kw_only=True):
    items: Annotated[list[Grant], doc("sorted by kind:name of the subject")]


class ConsumerList(Closed, kw_only=True):
    items: Annotated[list[Consumer], doc("declared and observed, sorted by kind/name")]


class AuditEvent(Closed, kw_only=True):
    time: Stamp
    action: str
    subject: Annotated[Subject, doc("the actor")]
    target: Subject | UnsetType = UNSET


class AuditPage(Closed, kw_only=True):
    items: Annotated[list[AuditEvent], doc("oldest first")]
    next_cursor: Annotated[str, doc("present when more events remain")] | UnsetType = UNSET


class HistoryEvent(Closed, kw_only=True):
    position: Annotated[int, doc(minimum=1)]
    time: Stamp
    name: str
    actor: str
    data: dict[str, Any]


class HistoryPage(Closed, kw_only=True):
    items: Annotated[list[HistoryEvent], doc("in log order")]
    next_cursor: Annotated[str, doc("present when more events remain")] | UnsetType = UNSET
