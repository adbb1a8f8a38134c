"""Imperatives a caller (or the reconciler) asks of a context. Inputs arrive decoded, unvalidated:
``decide`` validates them in the documented order.
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

import msgspec

from context_service.domain.context.events import (
    CloneSource,
    Consumer,
    QueryRecord,
    SnapshotRecord,
    SourceRef,
)
from context_service.domain.context.index_upload import UploadPart
from context_service.domain.events import Subject


class Command(msgspec.Struct, frozen=True, kw_only=True):
    actor: Subject


class CreateContext(Command, frozen=True):
    name: str
    namespace: str
    type: str
    backend: str
    size: str
    access_mode: str
    storage_class: str = ""


class GrantAccess(Command, frozen=True):
    subject: Subject | None
    permissions: tuple[str, ...]


class RevokeAccess(Command, frozen=True):
    subject: Subject


class AttachConsumer(Command, frozen=True):
    subject: Subject | None
    kind: str
    name: str
    access_mode: str
    active: bool = False


class DetachConsumer(Command, frozen=True):
    subject: Subject | None
    kind: str
    name: str


class PublishRevision(Command, frozen=True):
    id: str
    created_at: datetime | None
    operation: str
    producer: str = ""
    parameters: dict[str, str] = {}
    sources: tuple[SourceRef, ...] = ()
    files: int = 0
    bytes: int = 0


class PublishQueryIndex(Command, frozen=True):
    revision: str
    records: tuple[QueryRecord, ...]
    upload: UploadPart | None = None  # one part of a multi-part upload; None: the whole index
    blank_fact_key: bool = False  # a record sent ``factKey: ""`` (present, hence checked)


class DeleteContext(Command, frozen=True):
    force: bool = False


class ObserveClaim(Command, frozen=True):
    phase: str
    storage_class: str = ""


class ObservePodConsumers(Command, frozen=True):
    consumers: tuple[Consumer, ...]


class LifecycleCommand(Command, frozen=True):
    permission: ClassVar[str] = ""  # checked by ``decide`` first; "" for internal commands


class RecordSnapshot(LifecycleCommand, frozen=True):
    """Take a snapshot; the classes were resolved against the cluster beforehand."""

    permission: ClassVar[str] = "write"
    name: str
    storage_class: str
    snapshot_class: str
    protected: bool = False
    labels: dict[str, str] = {}


class ObserveSnapshot(LifecycleCommand, frozen=True):
    name: str
    status: str
    error: str = ""


class ObserveSnapshotObjectDeleted(LifecycleCommand, frozen=True):
    name: str
    object_name: str


class SetRetention(LifecycleCommand, frozen=True):
    permission: ClassVar[str] = "administer"
    keep_last: int = 0
    max_age: str = ""


class CollectSnapshots(LifecycleCommand, frozen=True):
    """A GC run; ``clones`` are the provenances of the namespace's live clones of this context."""

    permission: ClassVar[str] = "administer"
    dry_run: bool = False
    clones: tuple[CloneSource, ...] = ()


class CreateClone(LifecycleCommand, frozen=True):
    """Create this (target) context from a ready snapshot of ``source`` (checked on the source
    with ``clone_source``)."""

    name: str
    namespace: str
    source: str
    snapshot: SnapshotRecord
