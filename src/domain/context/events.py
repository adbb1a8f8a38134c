"""Facts about a named context. Names are stable: they are the stored topics (see registry)."""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.events import Event, Subject
from context_service.domain.values import parse_duration_ns


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
    # the snapshot's VolumeSnapshot, the clone's dataSource (spec 6.3): an adopted snapshot
    # keeps its object's own name; "" (older events, adopted clones) means the computed one
    object_name: str = ""


class SnapshotRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One snapshot as the context records it: the request, and the last observed status."""

    name: str
    object_name: str  # the VolumeSnapshot (spec 6.6 object name)
    type: str
    size: str
    access_mode: str
    storage_class: str
    snapshot_class: str
    created_at: datetime
    revision: str = ""
    protected: bool = False
    labels: dict[str, str] = {}
    status: str = "creating"
    error: str = ""


class Retention(msgspec.Struct, frozen=True):
    """``max_age`` as sent (a non-zero duration), "" when unset; ``keep_last`` 0 when unset."""

    keep_last: int = 0
    max_age: str = ""

    @property
    def max_age_ns(self) -> int | None:
        return parse_duration_ns(self.max_age) if self.max_age else None


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


class ImportedAudit(msgspec.Struct, frozen=True):
    time: datetime
    action: str
    subject: Subject
    target: Subject | None = None


class ContextAdopted(Event, frozen=True, tag="ContextAdopted"):
    namespace: str
    name: str
    type: str
    storage: Storage
    phase: str
    grants: tuple[Grant, ...]
    audit: tuple[ImportedAudit, ...] = ()
    consumers: tuple[Consumer, ...] = ()
    revisions: tuple[Revision, ...] = ()
    current_revision: str = ""
    retention: Retention = Retention()
    clone_of: CloneSource | None = None
    snapshots: tuple[SnapshotRecord, ...] = ()


class LifecycleEvent(Event, frozen=True):
    """Base of the events below (never stored itself)."""


class SnapshotRecorded(LifecycleEvent, frozen=True, tag="SnapshotRecorded"):
    """A snapshot was taken: the reconciler creates its VolumeSnapshot."""

    name: str
    object_name: str
    type: str
    size: str
    access_mode: str
    storage_class: str
    snapshot_class: str
    revision: str = ""
    protected: bool = False
    labels: dict[str, str] = {}


class SnapshotObserved(LifecycleEvent, frozen=True, tag="SnapshotObserved"):
    """The reconciler saw the snapshot's status change (``creating``, ``ready`` or ``failed``)."""

    name: str
    status: str
    error: str = ""


class RetentionPolicySet(LifecycleEvent, frozen=True, tag="RetentionPolicySet"):
    keep_last: int = 0
    max_age: str = ""


class SnapshotsCollected(LifecycleEvent, frozen=True, tag="SnapshotsCollected",
                         omit_defaults=True):
    """One (non-dry) GC run, or part ``part`` of ``parts`` of one: what it deleted and kept,
    oldest first, under which policy.

    A run naming more snapshots than one event may hold (``lifecycle.collection_events``) is
    split into parts appended together, deleted names first; the run's lists are the parts'
    lists in part order. A run of one part is stored without ``part`` and ``parts``, exactly as
    every run was before parts existed, so stored runs read as runs of one part."""

    deleted: tuple[str, ...]
    kept: tuple[str, ...]
    # factories, never treated as defaults: the policy is always stored, as it always was
    keep_last: int = msgspec.field(default_factory=int)
    max_age: str = msgspec.field(default_factory=str)
    part: int = 1  # 1-based
    parts: int = 1


class SnapshotObjectDeleted(LifecycleEvent, frozen=True, tag="SnapshotObjectDeleted"):
    """The reconciler deleted the VolumeSnapshot of a garbage-collected snapshot."""

    name: str
    object_name: str


LIFECYCLE_EVENTS: tuple[type[Event], ...] = (
    SnapshotRecorded, SnapshotObserved, RetentionPolicySet, SnapshotsCollected,
    SnapshotObjectDeleted,
)
