"""Facts about a named context. Names are stable: they are the stored topics (see registry)."""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.events import Event, Subject


class Storage(msgspec.Struct, frozen=True):
    backend: str
    size: str  # canonical form
    access_mode: str
    storage_class: str = ""


class Grant(msgspec.Struct, frozen=True):
    subject: Subject
    permissions: tuple[str, ...]
    created_at: datetime


class Consumer(msgspec.Struct, frozen=True):
    subject: Subject
    kind: str
    name: str
    access_mode: str
    active: bool
    desired: bool
    since: datetime


class SourceRef(msgspec.Struct, frozen=True):
    context: str
    type: str
    revision: str


class Revision(msgspec.Struct, frozen=True):
    id: str
    created_at: datetime
    operation: str
    producer: str = ""
    parameters: dict[str, str] = {}
    sources: tuple[SourceRef, ...] = ()
    files: int = 0
    bytes: int = 0


class QueryRecord(msgspec.Struct, frozen=True):
    id: str
    context: str
    type: str
    revision: str
    text: str
    title: str = ""
    keywords: tuple[str, ...] = ()
    source: SourceRef = SourceRef("", "", "")
    file: str = ""


class CloneSource(msgspec.Struct, frozen=True):
    context: str
    snapshot: str
    revision: str = ""


class ContextCreated(Event, frozen=True, tag="ContextCreated"):
    namespace: str
    name: str
    type: str
    storage: Storage
    owner: Subject
    clone_of: CloneSource | None = None
    revision: Revision | None = None


class AccessGranted(Event, frozen=True, tag="AccessGranted"):
    grant: Grant


class AccessRevoked(Event, frozen=True, tag="AccessRevoked"):
    subject: Subject


class ConsumerAttached(Event, frozen=True, tag="ConsumerAttached"):
    consumer: Consumer


class ConsumerDetached(Event, frozen=True, tag="ConsumerDetached"):
    subject: Subject
    kind: str
    name: str


class RevisionPublished(Event, frozen=True, tag="RevisionPublished"):
    revision: Revision
    appended: bool


class QueryIndexPublished(Event, frozen=True, tag="QueryIndexPublished"):
    revision: str
    records: tuple[QueryRecord, ...]


class ContextDeleted(Event, frozen=True, tag="ContextDeleted"):
    force: bool


class ClaimObserved(Event, frozen=True, tag="ClaimObserved"):
    """The reconciler saw the context's PVC change phase or assigned storage class."""

    phase: str
    storage_class: str = ""


class PodConsumersObserved(Event, frozen=True, tag="PodConsumersObserved"):
    """The reconciler's complete current view of Pods mounting the context's claim."""

    consumers: tuple[Consumer, ...]


CONTEXT_EVENTS: tuple[type[Event], ...] = (
    ContextCreated,
    AccessGranted,
    AccessRevoked,
    ConsumerAttached,
    ConsumerDetached,
    RevisionPublished,
    QueryIndexPublished,
    ContextDeleted,
    ClaimObserved,
    PodConsumersObserved,
)
