"""The state of one context stream, folded from its events with ``evolve``.

A stream is keyed by (namespace, name) and outlives a deletion: a later create of the same name
continues the same stream, so ``generation`` counts creations and ``live`` says whether the
latest one still stands.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.context.events import (
    AccessGranted,
    AccessRevoked,
    ClaimObserved,
    CloneSource,
    Consumer,
    ConsumerAttached,
    ConsumerDetached,
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    Grant,
    LifecycleEvent,
    PodConsumersObserved,
    QueryIndexPartStaged,
    QueryIndexPublished,
    Retention,
    RetentionPolicySet,
    Revision,
    RevisionPublished,
    SnapshotObserved,
    SnapshotRecord,
    SnapshotRecorded,
    SnapshotsCollected,
    Storage,
)
from context_service.domain.context.index_upload import IndexUpload, replaced, staged
from context_service.domain.events import ADMIN, Event, Subject

PERMISSIONS = ("read", "write", "attach", "derive", "administer")


class ContextState(msgspec.Struct, frozen=True):
    live: bool = False
    generation: int = 0
    namespace: str = ""
    name: str = ""
    type: str = ""
    storage: Storage = Storage("pvc", "", "")
    phase: str = ""
    observed_storage_class: str = ""
    created_at: datetime | None = None
    grants: tuple[Grant, ...] = ()  # sorted by subject key
    declared: tuple[Consumer, ...] = ()  # in attach order
    observed: tuple[Consumer, ...] = ()  # pod consumers, as last observed
    revisions: tuple[Revision, ...] = ()
    current_revision: str = ""
    index_revision: str | None = None
    clone_of: CloneSource | None = None
    snapshots: tuple[SnapshotRecord, ...] = ()  # in recording order; GC removes
    retention: Retention = Retention()
    last_collection: tuple[SnapshotRecord, ...] = ()  # what the latest GC run deleted (all parts)
    upload: IndexUpload | None = None  # the open multi-part index upload
    index_upload: str = ""  # the upload that made the current index ("" for one body)
    replaced_uploads: tuple[str, ...] = ()  # uploads of the current revision a newer one replaced

    @property
    def status(self) -> str:
        return "ready" if self.phase == "Bound" else "provisioning"

    @property
    def storage_class(self) -> str:
        return self.storage.storage_class or self.observed_storage_class

    def permissions_of(self, subject: Subject) -> tuple[str, ...]:
        if subject == ADMIN:
            return PERMISSIONS
        held = {p for g in self.grants if g.subject == subject for p in g.permissions}
        return tuple(p for p in PERMISSIONS if p in held)

    def consumers(self) -> list[Consumer]:
        """Declared then observed, sorted by ``kind/name`` (stable: declared first on ties)."""
        combined = list(self.declared) + list(self.observed)
        return sorted(combined, key=lambda c: f"{c.kind}/{c.name}")


def evolve(state: ContextState, event: Event) -> ContextState:
    match event:
        case ContextAdopted():
            return ContextState(
                live=True, generation=state.generation + 1, namespace=event.namespace,
                name=event.name, type=event.type, storage=event.storage, phase=event.phase,
                created_at=event.at, grants=event.grants, declared=event.consumers,
                revisions=event.revisions, current_revision=event.current_revision,
                clone_of=event.clone_of, snapshots=event.snapshots, retention=event.retention)
        case ContextCreated():
            owner = Grant(event.owner, PERMISSIONS, event.at)
            revisions: tuple[Revision, ...] = (event.revision,) if event.revision else ()
            return ContextState(
                live=True,
                generation=state.generation + 1,
                namespace=event.namespace,
                name=event.name,
                type=event.type,
                storage=event.storage,
                created_at=event.at,
                grants=(owner,),
                revisions=revisions,
                current_revision=event.revision.id if event.revision else "",
                clone_of=event.clone_of,
            )
        case AccessGranted():
            others = [g for g in state.grants if g.subject != event.grant.subject]
            grants = sorted([*others, event.grant], key=lambda g: g.subject.key)
            return msgspec.structs.replace(state, grants=tuple(grants))
        case AccessRevoked():
            remaining = tuple(g for g in state.grants if g.subject != event.subject)
            return msgspec.structs.replace(state, grants=remaining)
        case ConsumerAttached():
            c = event.consumer
            declared = _without(state.declared, c.subject, c.kind, c.name)
            return msgspec.structs.replace(state, declared=(*declared, c))
        case ConsumerDetached():
            declared = _without(state.declared, event.subject, event.kind, event.name)
            return msgspec.structs.replace(state, declared=declared)
        case RevisionPublished():
            history = (*state.revisions, event.revision) if event.appended else state.revisions
            return msgspec.structs.replace(
                state, revisions=history, current_revision=event.revision.id,
                upload=None, index_upload="", replaced_uploads=())
        case QueryIndexPartStaged():
            before = state.upload
            upload = staged(before, event)
            gone = state.replaced_uploads
            if before is not None and before.upload_id != event.upload_id:
                gone = replaced(gone, before.upload_id)
            return msgspec.structs.replace(state, upload=upload, replaced_uploads=gone)
        case QueryIndexPublished():
            gone = state.replaced_uploads
            if state.upload is not None and state.upload.upload_id != event.upload_id:
                gone = replaced(gone, state.upload.upload_id)
            # the upload that made the index this one replaces is finished: a late part of it
            # must not bring the older index back
            if state.index_upload and state.index_upload != event.upload_id:
                gone = replaced(gone, state.index_upload)
            return msgspec.structs.replace(state, index_revision=event.revision, upload=None,
                                           index_upload=event.upload_id,
                                           replaced_uploads=gone)
        case ContextDeleted():
            return ContextState(live=False, generation=state.generation,
                                namespace=state.namespace, name=state.name)
        case ClaimObserved():
            return msgspec.structs.replace(
                state, phase=event.phase,
                observed_storage_class=event.storage_class or state.observed_storage_class,
            )
        case PodConsumersObserved():
            return msgspec.structs.replace(state, observed=event.consumers)
        case LifecycleEvent():
            return evolve_lifecycle(state, event)
    return state


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
            # a later part of a run adds to what the run's earlier parts deleted
            earlier = state.last_collection if event.part > 1 else ()
            return replace(state,
                           snapshots=tuple(s for s in state.snapshots if s.name not in gone),
                           last_collection=(*earlier,
                                            *(s for s in state.snapshots if s.name in gone)))
    return state


def _without(
    consumers: tuple[Consumer, ...], subject: Subject, kind: str, name: str
) -> tuple[Consumer, ...]:
    return tuple(
        c for c in consumers if not (c.subject == subject and c.kind == kind and c.name == name)
    )


def fold(events: list[Event], state: ContextState | None = None) -> ContextState:
    state = state or ContextState()
    for event in events:
        state = evolve(state, event)
    return state
