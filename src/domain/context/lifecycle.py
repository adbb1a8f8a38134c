"""Context lifecycle: snapshots, clones, retention and garbage collection (spec 1.11, 6.6).

The records a context keeps about its snapshots, the events and commands that change them, and
their decisions. ``decide`` checks the permission a command names before calling
``decide_lifecycle``; storage- and snapshot-class resolution needs the cluster and happens before
(``snapshot_classes``), so every function here stays pure.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar

import msgspec

from context_service.domain.cluster import snapshot_object_name
from context_service.domain.context import gc
from context_service.domain.context.commands import Command
from context_service.domain.context.events import (
    CloneSource,
    ContextCreated,
    Revision,
    SourceRef,
    Storage,
)
from context_service.domain.context.validation import NAME_MESSAGE
from context_service.domain.errors import (
    ContextExistsError,
    ContextInvalidError,
    ContextNotFoundError,
    DomainError,
    RequestInvalidError,
)
from context_service.domain.events import Event
from context_service.domain.values import is_context_name, is_dns_label, parse_duration_ns, quote

if TYPE_CHECKING:
    from context_service.domain.context.state import ContextState

SNAPSHOT_MESSAGE = "snapshot must be a Kubernetes name"
STATUSES = ("creating", "ready", "failed")
CLONE_PRODUCER = "context-service"
RESTORE_DETAIL = ("CSI cannot replace an existing PVC atomically; "
                  "clone the snapshot into a new context")


# --- records ----------------------------------------------------------------------------------


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


# --- events -----------------------------------------------------------------------------------


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


class SnapshotsCollected(LifecycleEvent, frozen=True, tag="SnapshotsCollected"):
    """One (non-dry) GC run: what it deleted and kept, oldest first, under which policy."""

    deleted: tuple[str, ...]
    kept: tuple[str, ...]
    keep_last: int = 0
    max_age: str = ""


class SnapshotObjectDeleted(LifecycleEvent, frozen=True, tag="SnapshotObjectDeleted"):
    """The reconciler deleted the VolumeSnapshot of a garbage-collected snapshot."""

    name: str
    object_name: str


LIFECYCLE_EVENTS: tuple[type[Event], ...] = (
    SnapshotRecorded, SnapshotObserved, RetentionPolicySet, SnapshotsCollected,
    SnapshotObjectDeleted,
)


# --- commands ---------------------------------------------------------------------------------


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


# --- request-level checks (spec 1.11, 2.8) ----------------------------------------------------


def validate_snapshot_name(name: str) -> None:
    if not is_dns_label(name):
        raise RequestInvalidError(SNAPSHOT_MESSAGE)


def validate_clone(name: str, snapshot: str) -> None:
    if not is_context_name(name):
        raise RequestInvalidError(NAME_MESSAGE)
    validate_snapshot_name(snapshot)


def is_protected(protected: bool, labels: dict[str, str]) -> bool:
    """``labels.protected`` equal to ``true`` in any case forces protection."""
    return protected or labels.get("protected", "").lower() == "true"


def find_snapshot(state: ContextState, name: str) -> SnapshotRecord:
    for snapshot in state.snapshots:
        if snapshot.name == name:
            return snapshot
    raise ContextNotFoundError()


def clone_source(state: ContextState, snapshot: str) -> SnapshotRecord:
    """The snapshot to clone: it must exist (404) and be ready (400)."""
    found = find_snapshot(state, snapshot)
    if found.status != "ready":
        raise ContextInvalidError(f"snapshot {quote(snapshot)} is not ready")
    return found


def retention_of(keep_last: int, max_age: str) -> Retention:
    if keep_last < 0:
        raise ContextInvalidError("keepLast cannot be negative")
    nanos = parse_duration_ns(max_age) if max_age else 0
    if nanos is None or nanos < 0:
        raise ContextInvalidError("maxAge must be a non-negative duration")
    return Retention(keep_last, max_age if nanos else "")


def collection_plan(state: ContextState, clones: tuple[CloneSource, ...],
                    now: datetime) -> gc.Plan[SnapshotRecord]:
    policy = state.retention
    return gc.plan(state.snapshots, policy.keep_last, policy.max_age_ns, clones, now)


# --- decisions --------------------------------------------------------------------------------


def decide_lifecycle(command: LifecycleCommand, state: ContextState,
                     now: datetime) -> list[Event]:
    actor = command.actor.key
    match command:
        case RecordSnapshot():
            return [_record(command, state, now)]
        case ObserveSnapshot():
            return _observe(command, state, now)
        case ObserveSnapshotObjectDeleted():
            if any(s.name == command.name for s in state.snapshots):
                return []  # the name was taken again: its object is no longer the collected one
            return [SnapshotObjectDeleted(at=now, actor=actor, name=command.name,
                                          object_name=command.object_name)]
        case SetRetention():
            policy = retention_of(command.keep_last, command.max_age)
            if policy == state.retention:
                return []
            return [RetentionPolicySet(at=now, actor=actor, keep_last=policy.keep_last,
                                       max_age=policy.max_age)]
        case CollectSnapshots():
            if command.dry_run:
                return []
            result = collection_plan(state, command.clones, now)
            return [SnapshotsCollected(
                at=now, actor=actor, deleted=tuple(s.name for s in result.deleted),
                kept=tuple(s.name for s in result.kept), keep_last=state.retention.keep_last,
                max_age=state.retention.max_age)]
        case CreateClone():
            return [_clone(command, state, now)]
    raise DomainError(f"unknown command {type(command).__name__}")


def _record(command: RecordSnapshot, state: ContextState, now: datetime) -> SnapshotRecorded:
    validate_snapshot_name(command.name)
    if any(s.name == command.name for s in state.snapshots):
        raise ContextExistsError()
    storage = state.storage
    return SnapshotRecorded(
        at=now, actor=command.actor.key, name=command.name,
        object_name=snapshot_object_name(state.name, command.name), type=state.type,
        size=storage.size, access_mode=storage.access_mode, storage_class=command.storage_class,
        snapshot_class=command.snapshot_class, revision=state.current_revision,
        protected=is_protected(command.protected, command.labels), labels=dict(command.labels))


def _observe(command: ObserveSnapshot, state: ContextState, now: datetime) -> list[Event]:
    if command.status not in STATUSES:
        raise DomainError(f"unknown snapshot status {quote(command.status)}")
    error = command.error if command.status == "failed" else ""
    for snapshot in state.snapshots if state.live else ():
        if snapshot.name == command.name:
            if (snapshot.status, snapshot.error) == (command.status, error):
                return []
            return [SnapshotObserved(at=now, actor=command.actor.key, name=command.name,
                                     status=command.status, error=error)]
    return []


def _clone(command: CreateClone, state: ContextState, now: datetime) -> ContextCreated:
    validate_clone(command.name, command.snapshot.name)
    if state.live:
        raise ContextExistsError()
    snap = command.snapshot
    revision = None
    if snap.revision:
        revision = Revision(snap.revision, now, "clone", CLONE_PRODUCER,
                            sources=(SourceRef(command.source, snap.type, snap.revision),))
    storage = Storage("pvc", snap.size, snap.access_mode, snap.storage_class)
    return ContextCreated(
        at=now, actor=command.actor.key, namespace=command.namespace, name=command.name,
        type=snap.type, storage=storage, owner=command.actor,
        clone_of=CloneSource(command.source, snap.name, snap.revision), revision=revision)


# --- evolution --------------------------------------------------------------------------------


def evolve_lifecycle(state: ContextState, event: LifecycleEvent) -> ContextState:
    replace = msgspec.structs.replace
    match event:
        case SnapshotRecorded():
            record = SnapshotRecord(
                name=event.name, object_name=event.object_name, type=event.type,
                size=event.size, access_mode=event.access_mode,
                storage_class=event.storage_class, snapshot_class=event.snapshot_class,
                created_at=event.at, revision=event.revision, protected=event.protected,
                labels=event.labels)
            return replace(state, snapshots=(*state.snapshots, record))
        case SnapshotObserved():
            snapshots = tuple(replace(s, status=event.status, error=event.error)
                              if s.name == event.name else s for s in state.snapshots)
            return replace(state, snapshots=snapshots)
        case RetentionPolicySet():
            return replace(state, retention=Retention(event.keep_last, event.max_age))
        case SnapshotsCollected():
            gone = set(event.deleted)
            return replace(state,
                           snapshots=tuple(s for s in state.snapshots if s.name not in gone),
                           last_collection=tuple(s for s in state.snapshots if s.name in gone))
    return state
