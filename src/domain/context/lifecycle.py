"""Context lifecycle decisions: snapshots, clones, retention and garbage collection (spec 1.11,
6.6). Their events are in ``events``, their commands in ``commands``, their folding in ``state``.
``decide`` checks the permission a command names before calling ``decide_lifecycle``; storage- and
snapshot-class resolution needs the cluster and happens before (``snapshot_classes``), so every
function here stays pure."""

from __future__ import annotations

from datetime import datetime

from context_service.domain.cluster import snapshot_object_name
from context_service.domain.context import gc
from context_service.domain.context.commands import (
    CollectSnapshots,
    CreateClone,
    LifecycleCommand,
    ObserveSnapshot,
    ObserveSnapshotObjectDeleted,
    RecordSnapshot,
    SetRetention,
)
from context_service.domain.context.events import (
    CloneSource,
    ContextCreated,
    Retention,
    RetentionPolicySet,
    Revision,
    SnapshotObjectDeleted,
    SnapshotObserved,
    SnapshotRecord,
    SnapshotRecorded,
    SnapshotsCollected,
    SourceRef,
    Storage,
)
from context_service.domain.context.state import ContextState
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

SNAPSHOT_MESSAGE = "snapshot must be a Kubernetes name"
STATUSES = ("creating", "ready", "failed")
CLONE_PRODUCER = "context-service"
RESTORE_DETAIL = ("CSI cannot replace an existing PVC atomically; "
                  "clone the snapshot into a new context")
# The encoded names one GC event may carry: a quarter of the log's per-event limit (1,000,000
# bytes, what the bus relays), so the rest of the event always fits. A snapshot name is at most
# 63 characters: about 3,900 names a part.
PART_NAME_BYTES = 256 * 1024
_NAME_OVERHEAD = 3  # quotes and comma: a name is a label value, nothing to escape


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


def collection_events(result: gc.Plan[SnapshotRecord], policy: Retention, actor: str,
                      now: datetime) -> tuple[SnapshotsCollected, ...]:
    """The record of a GC run: one event while its names fit ``PART_NAME_BYTES``, else parts of
    at most that many bytes of names, deleted names first (each part stays far below the log's
    event limit, whatever the number of snapshots)."""
    named = [(s.name, True) for s in result.deleted] + [(s.name, False) for s in result.kept]
    chunks = _parts(named)
    return tuple(SnapshotsCollected(
        at=now, actor=actor, deleted=tuple(n for n, gone in chunk if gone),
        kept=tuple(n for n, gone in chunk if not gone), keep_last=policy.keep_last,
        max_age=policy.max_age, part=part, parts=len(chunks))
        for part, chunk in enumerate(chunks, 1))


def _parts(named: list[tuple[str, bool]]) -> list[list[tuple[str, bool]]]:
    """``named`` in order, cut where the next name would pass ``PART_NAME_BYTES``; one empty
    part when there is nothing (a run that names nothing is still recorded)."""
    chunks: list[list[tuple[str, bool]]] = [[]]
    size = 0
    for item in named:
        cost = len(item[0].encode()) + _NAME_OVERHEAD
        if chunks[-1] and size + cost > PART_NAME_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += cost
    return chunks


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
            return list(collection_events(result, state.retention, actor, now))
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
        clone_of=CloneSource(command.source, snap.name, snap.revision, snap.object_name),
        revision=revision)
