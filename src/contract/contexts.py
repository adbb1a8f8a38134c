"""Named contexts (``/v1/contexts``, ``/v1/namespaces/{namespace}/contexts``): requests and
answers as msgspec Structs, for the routes, the OpenAPI document and clients.

Answers are ``Closed``: the document lists every key a route writes, in the order it writes
them (``http.render``); a key the route omits when empty is ``UNSET`` here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from msgspec import UNSET, UnsetType

from context_service.contract.base import Closed, Request, doc, one_of
from context_service.contract.values import (
    Free,
    Int64,
    Label,
    Name,
    Permission,
    Size,
    Stamp,
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
    parameters: dict[str, str] | UnsetType = UNSET
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
