"""``decide(command, state, now)``: the events a command causes, or a ``DomainError``.

Checks run in the order the API documents; the first failure wins. Pure: no clock, no I/O.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.context import lifecycle
from context_service.domain.context.commands import (
    AttachConsumer,
    Command,
    CreateClone,
    CreateContext,
    DeleteContext,
    DetachConsumer,
    GrantAccess,
    LifecycleCommand,
    ObserveClaim,
    ObservePodConsumers,
    PublishQueryIndex,
    PublishRevision,
    RevokeAccess,
)
from context_service.domain.context.events import (
    AccessGranted,
    AccessRevoked,
    ClaimObserved,
    Consumer,
    ConsumerAttached,
    ConsumerDetached,
    ContextCreated,
    ContextDeleted,
    Grant,
    PodConsumersObserved,
    Revision,
    RevisionPublished,
    Storage,
)
from context_service.domain.context.index_checks import QUERYABLE_TYPES, check_records
from context_service.domain.context.index_upload import body_events, open_upload, part_events
from context_service.domain.context.state import PERMISSIONS, ContextState
from context_service.domain.context.validation import (
    valid_subject,
    validate_consumer_subject,
    validate_create,
    validate_grant,
    validate_revision,
)
from context_service.domain.errors import (
    ContextExistsError,
    ContextInUseError,
    ContextInvalidError,
    ContextNotFoundError,
    DomainError,
    RequestInvalidError,
)
from context_service.domain.events import Event, Subject
from context_service.domain.values import canonical_quantity, quote


def authorize(state: ContextState, actor: Subject, permission: str) -> None:
    """Absent, deleted and unauthorized look the same: 404."""
    if not state.live or permission not in state.permissions_of(actor):
        raise ContextNotFoundError()


def checked_clone(command: CreateClone, source: ContextState) -> CreateClone:
    """``command`` checked against its source as the log holds it when the clone is decided
    (the route read the source when the request began): the caller still holds ``derive``
    (404), the snapshot is still recorded (404) and ready (400). The command then carries the
    snapshot as recorded now. Checks in the spec's order, before the target's own (409)."""
    authorize(source, command.actor, "derive")
    lifecycle.validate_clone(command.name, command.snapshot.name)
    snapshot = lifecycle.clone_source(source, command.snapshot.name)
    return msgspec.structs.replace(command, snapshot=snapshot)


def decide(command: Command, state: ContextState, now: datetime) -> list[Event]:
    actor = command.actor.key
    match command:
        case CreateContext():
            validate_create(command)
            if state.live:
                raise ContextExistsError()
            storage = Storage("pvc", canonical_quantity(command.size), command.access_mode,
                              command.storage_class)
            return [ContextCreated(at=now, actor=actor, namespace=command.namespace,
                                   name=command.name, type=command.type, storage=storage,
                                   owner=command.actor)]
        case GrantAccess():
            authorize(state, command.actor, "administer")
            subject = validate_grant(command)
            grant = Grant(subject, command.permissions, now)
            return [AccessGranted(at=now, actor=actor, grant=grant)]
        case RevokeAccess():
            authorize(state, command.actor, "administer")
            if not valid_subject(command.subject):
                raise RequestInvalidError("valid subject is required")
            if all(g.subject != command.subject for g in state.grants):
                raise ContextNotFoundError()
            return [AccessRevoked(at=now, actor=actor, subject=command.subject)]
        case AttachConsumer() | DetachConsumer():
            return _consumer(command, state, now)
        case PublishRevision():
            revision = validate_revision(command)
            authorize(state, command.actor, "write")
            if state.current_revision == revision.id:
                return []
            return [RevisionPublished(at=now, actor=actor, revision=revision, appended=True)]
        case PublishQueryIndex():
            authorize(state, command.actor, "write")
            return _publish_index(command, state, now)
        case DeleteContext():
            authorize(state, command.actor, "administer")
            consumers = state.consumers()
            if consumers and not command.force:
                listed = ", ".join(f"{c.kind}/{c.name}" for c in consumers)
                raise ContextInUseError(
                    f"{state.name} is used by {listed}; detach consumers or use force deletion")
            return [ContextDeleted(at=now, actor=actor, force=command.force)]
        case ObserveClaim():
            if not state.live:
                return []
            assigned = command.storage_class if not state.storage.storage_class else ""
            if command.phase == state.phase and (
                    not assigned or assigned == state.observed_storage_class):
                return []
            return [ClaimObserved(at=now, actor=actor, phase=command.phase,
                                  storage_class=assigned)]
        case ObservePodConsumers():
            if not state.live or command.consumers == state.observed:
                return []
            return [PodConsumersObserved(at=now, actor=actor, consumers=command.consumers)]
        case LifecycleCommand():
            if command.permission:
                authorize(state, command.actor, command.permission)
            return lifecycle.decide_lifecycle(command, state, now)
    raise DomainError(f"unknown command {type(command).__name__}")


def _consumer(command: AttachConsumer | DetachConsumer, state: ContextState,
              now: datetime) -> list[Event]:
    actor = command.actor
    authorize(state, actor, "attach")
    subject = command.subject
    if subject is None or (not subject.kind and not subject.name):
        subject = actor
    if subject != actor:
        authorize(state, actor, "administer")
    validate_consumer_subject(subject, command.kind, command.name)
    if isinstance(command, DetachConsumer):
        return [ConsumerDetached(at=now, actor=actor.key, subject=subject, kind=command.kind,
                                 name=command.name)]
    if command.access_mode not in ("readOnly", "readWrite"):
        raise RequestInvalidError("consumer accessMode must be readOnly or readWrite")
    if command.access_mode == "readWrite":
        authorize(state, actor, "write")
    consumer = Consumer(subject, command.kind, command.name, command.access_mode,
                        command.active, True, now)
    return [ConsumerAttached(at=now, actor=actor.key, consumer=consumer)]


def _publish_index(command: PublishQueryIndex, state: ContextState,
                   now: datetime) -> list[Event]:
    if state.type not in QUERYABLE_TYPES:
        raise ContextInvalidError("query indexes require memory or knowledge contexts")
    if not command.revision or command.revision != state.current_revision:
        raise ContextInvalidError("query index revision must match the current context revision")
    part = command.upload
    upload = state.upload
    continued = (open_upload(upload, command.revision, part.upload_id)
                 if part is not None else None)
    check_records(command.records, name=state.name, type=state.type, revision=command.revision,
                  blank_fact_key=command.blank_fact_key,
                  known_types=continued.types() if continued is not None else None)
    actor = command.actor.key
    if part is None:
        return body_events(now, actor, command.revision, command.records)
    if (continued is None and state.index_revision == command.revision
            and state.index_upload == part.upload_id):
        return []  # a part of the upload that is already current, sent again
    if part.upload_id in state.replaced_uploads:
        raise ContextInvalidError(
            f"query index upload {quote(part.upload_id)} was replaced by a newer upload")
    return part_events(now, actor, command.revision, command.records, part, upload)


__all__ = ["PERMISSIONS", "QUERYABLE_TYPES", "Revision", "authorize", "decide"]
