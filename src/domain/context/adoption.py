"""Adoption of existing cluster objects (spec 6.10): a context PVC labelled as ours, with its
annotations and VolumeSnapshots, becomes one ``ContextAdopted`` event (in ``events``). Pure: the
caller reads the cluster through the port."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TypeVar

import msgspec

from context_service.domain.cluster import (
    MANAGED_BY,
    MANAGER,
    NAME_LABEL,
    TYPE_LABEL,
    ClaimInfo,
    SnapshotInfo,
    context_claim_name,
    recordable_error,
)
from context_service.domain.context.events import (
    CloneSource,
    Consumer,
    ContextAdopted,
    Grant,
    ImportedAudit,
    Retention,
    Revision,
    SnapshotRecord,
    SourceRef,
    Storage,
)
from context_service.domain.events import ANONYMOUS, Subject
from context_service.domain.values import canonical_quantity, is_positive_quantity

T = TypeVar("T")
PREFIX = "context.rossoctl.io/"
ALL = ("read", "write", "attach", "derive", "administer")


# The annotations are written by earlier installations in the API's camelCase shapes.
class _Subject(msgspec.Struct):
    kind: str
    name: str


class _Grant(msgspec.Struct, rename="camel"):
    subject: _Subject
    permissions: list[str]
    created_at: datetime


class _Audit(msgspec.Struct):
    time: datetime
    action: str
    subject: _Subject
    target: _Subject | None = None


class _Consumer(msgspec.Struct, rename="camel"):
    subject: _Subject
    kind: str
    name: str
    access_mode: str = "readOnly"
    active: bool = False
    since: datetime | None = None


class _Source(msgspec.Struct):
    context: str = ""
    type: str = ""
    revision: str = ""


class _Revision(msgspec.Struct, rename="camel"):
    id: str
    created_at: datetime
    operation: str = ""
    producer: str = ""
    parameters: dict[str, str] = {}
    sources: list[_Source] = []
    files: int = 0
    bytes: int = 0


class _Retention(msgspec.Struct, rename="camel"):
    keep_last: int = 0
    max_age: str = ""


def is_context_claim(claim: ClaimInfo) -> bool:
    name = claim.labels.get(NAME_LABEL, "")
    return (claim.labels.get(MANAGED_BY) == MANAGER and name != ""
            and claim.name == context_claim_name(name))


def _json(claim: ClaimInfo, key: str, shape: type[T], default: T) -> T:
    raw = claim.annotations.get(PREFIX + key)
    if raw is None:
        return default
    return msgspec.json.decode(raw, type=shape)


def _subject(s: _Subject) -> Subject:
    return Subject(s.kind, s.name)


def adopt_claim(claim: ClaimInfo, snapshots: list[SnapshotInfo], now: datetime,
                actor: str) -> ContextAdopted:
    """The event recording ``claim`` (already known to be a context claim)."""
    created = claim.created_at or now
    raw_grants = claim.annotations.get(PREFIX + "access-grants")
    if raw_grants is None:
        grants: tuple[Grant, ...] = (Grant(ANONYMOUS, ALL, created),)
    else:
        parsed = msgspec.json.decode(raw_grants, type=list[_Grant])
        grants = tuple(sorted((Grant(_subject(g.subject), tuple(g.permissions),
                                     g.created_at.astimezone(UTC)) for g in parsed),
                              key=lambda g: g.subject.key))
    audit = [ImportedAudit(a.time, a.action, _subject(a.subject),
                           _subject(a.target) if a.target else None)
             for a in _json(claim, "audit-events", list[_Audit], [])]
    consumers = [Consumer(_subject(c.subject), c.kind, c.name, c.access_mode, c.active, True,
                          c.since or created)
                 for c in _json(claim, "consumers", list[_Consumer], [])]
    revisions = [Revision(r.id, r.created_at, r.operation, r.producer, dict(r.parameters),
                          tuple(_source(s) for s in r.sources), r.files, r.bytes)
                 for r in _json(claim, "revisions", list[_Revision], [])]
    retention = _json(claim, "snapshot-retention", _Retention, _Retention())
    source = claim.annotations.get(PREFIX + "source-context", "")
    clone_of = None
    if source:
        clone_of = CloneSource(source, claim.annotations.get(PREFIX + "source-snapshot", ""),
                               claim.annotations.get(PREFIX + "source-revision", ""))
    size = canonical_quantity(claim.size) if is_positive_quantity(claim.size) else claim.size
    name = claim.labels[NAME_LABEL]
    return ContextAdopted(
        at=now, actor=actor, namespace=claim.namespace, name=name,
        type=claim.labels.get(TYPE_LABEL, "workspace"),
        storage=Storage("pvc", size, claim.access_modes[0] if claim.access_modes else "",
                        claim.storage_class),
        phase=claim.phase, grants=grants, audit=tuple(audit), consumers=tuple(consumers),
        revisions=tuple(revisions),
        current_revision=claim.annotations.get(PREFIX + "current-revision", ""),
        retention=Retention(retention.keep_last, retention.max_age), clone_of=clone_of,
        snapshots=tuple(s for s in (snapshot_record(v, now) for v in snapshots) if s))


def _source(s: _Source) -> SourceRef:
    return SourceRef(s.context, s.type, s.revision)


SNAPSHOT_REQUIRED = ("context-type", "storage-size", "access-mode")


def snapshot_record(snapshot: SnapshotInfo, now: datetime) -> SnapshotRecord | None:
    """A VolumeSnapshot as a snapshot of the context, or None when it could never be cloned."""
    notes = snapshot.annotations
    if any(not notes.get(PREFIX + key) for key in SNAPSHOT_REQUIRED):
        return None
    labels_raw = notes.get(PREFIX + "snapshot-labels") or "{}"
    labels = msgspec.json.decode(labels_raw, type=dict[str, str] | None) or {}
    status = "ready" if snapshot.ready_to_use else "creating"
    if snapshot.error_message:
        status = "failed"
    return SnapshotRecord(
        name=snapshot.labels.get(PREFIX + "snapshot", snapshot.name), object_name=snapshot.name,
        type=notes[PREFIX + "context-type"], size=notes[PREFIX + "storage-size"],
        access_mode=notes[PREFIX + "access-mode"],
        storage_class=notes.get(PREFIX + "storage-class", ""),
        snapshot_class=snapshot.snapshot_class, created_at=snapshot.created_at or now,
        revision=notes.get(PREFIX + "source-revision", ""),
        protected=notes.get(PREFIX + "protected") == "true", labels=labels, status=status,
        error=recordable_error(snapshot.error_message))
