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


class FieldSpan(msgspec.Struct, frozen=True):
    """Code-point offsets into the record's text (0-based, ``end`` exclusive)."""

    start: int
    end: int


class RecordField(msgspec.Struct, frozen=True, omit_defaults=True):
    """A studied field of a record (agent-context-api §5.1): ``value`` is a JSON number, a
    ``{"amount","currency"}`` object, a ``YYYY-MM-DD`` string, a bool or a string, by type."""

    name: str
    type: str
    value: object
    span: FieldSpan | None = None


def _no_source() -> SourceRef:
    return SourceRef("", "", "")


def _no_keywords() -> tuple[str, ...]:
    return ()  # a function, not ``tuple``: msgspec would turn ``tuple`` into a plain default


class QueryRecord(msgspec.Struct, frozen=True, omit_defaults=True):
    """A record of a published index. Stored events always carry the original fields (their
    defaults come from factories, which ``omit_defaults`` never treats as defaults) and leave the
    extended ones out when empty, so a record without them encodes exactly as it always did."""

    id: str
    context: str
    type: str
    revision: str
    text: str
    title: str = msgspec.field(default_factory=str)
    keywords: tuple[str, ...] = msgspec.field(default_factory=_no_keywords)
    source: SourceRef = msgspec.field(default_factory=_no_source)
    file: str = msgspec.field(default_factory=str)
    # The extended record (agent-context-api §5.1); stored events leave these out when empty.
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    supersedes: tuple[str, ...] = ()
    fact_key: str = ""
    fields: tuple[RecordField, ...] = ()


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


class QueryIndexPublished(Event, frozen=True, tag="QueryIndexPublished", omit_defaults=True):
    """The context's index became current. With ``upload_id`` empty, ``records`` is the whole
    index; otherwise the index is the records of that upload's staged parts 1..``parts`` in part
    order (``records`` is empty), so no single event outgrows a message of the bus."""

    revision: str
    records: tuple[QueryRecord, ...]
    upload_id: str = ""
    parts: int = 0


class QueryIndexPartStaged(Event, frozen=True, tag="QueryIndexPartStaged"):
    """One part of a multi-part index upload, not yet current (it never shows on its own)."""

    revision: str
    upload_id: str
    part: int  # 1-based
    parts: int
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
    QueryIndexPartStaged,
    ContextDeleted,
    ClaimObserved,
    PodConsumersObserved,
)
