"""Request-level validation of context commands (bare messages, spec section 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from context_service.domain.context.events import Revision
from context_service.domain.echoed import quoted
from context_service.domain.errors import RequestInvalidError
from context_service.domain.events import SUBJECT_KINDS, Subject
from context_service.domain.values import (
    is_context_name,
    is_digest,
    is_dns_label,
    is_positive_quantity,
    quote,
)

if TYPE_CHECKING:
    from context_service.domain.context.commands import CreateContext, GrantAccess, PublishRevision

CONTEXT_TYPES = ("workspace", "state", "memory", "knowledge", "artifacts")
ACCESS_MODES = ("ReadWriteOnce", "ReadWriteMany")
PERMISSION_NAMES = ("read", "write", "attach", "derive", "administer")
NAME_MESSAGE = "name must be a lowercase Kubernetes name no longer than 50 characters"


def valid_subject(subject: Subject | None) -> bool:
    return subject is not None and subject.kind in SUBJECT_KINDS and subject.name.strip() != ""


def validate_create(command: CreateContext) -> None:
    if not is_context_name(command.name):
        raise RequestInvalidError(NAME_MESSAGE)
    if not is_dns_label(command.namespace):
        raise RequestInvalidError("namespace must be a lowercase Kubernetes name")
    if command.type not in CONTEXT_TYPES:
        raise RequestInvalidError("type must be workspace, state, memory, knowledge, or artifacts")
    if command.backend != "pvc":
        raise RequestInvalidError("storage.backend must be pvc")
    if not is_positive_quantity(command.size):
        raise RequestInvalidError("storage.size must be a positive Kubernetes quantity")
    if command.access_mode not in ACCESS_MODES:
        raise RequestInvalidError("storage.accessMode must be ReadWriteOnce or ReadWriteMany")


def validate_grant(command: GrantAccess) -> Subject:
    subject = command.subject
    if subject is None or not valid_subject(subject) or not command.permissions:
        raise RequestInvalidError("grant requires a valid subject and permissions")
    for permission in command.permissions:
        if permission not in PERMISSION_NAMES:
            raise RequestInvalidError(f"unsupported permission {quoted(permission)}")  # cut: 0059
    seen: set[str] = set()
    for permission in command.permissions:
        if permission in seen:
            raise RequestInvalidError(f"duplicate permission {quote(permission)}")
        seen.add(permission)
    for permission in ("write", "attach", "derive"):
        if permission in seen and "read" not in seen:
            raise RequestInvalidError(f"permission {quote(permission)} requires read")
    return subject


def validate_consumer_subject(subject: Subject, kind: str, name: str) -> None:
    if not valid_subject(subject) or not kind or not name:
        raise RequestInvalidError("consumer subject, kind, and name are required")


def validate_revision(command: PublishRevision) -> Revision:
    if not is_digest(command.id):
        raise RequestInvalidError("revision id must be a lowercase SHA-256 digest")
    if command.created_at is None:
        raise RequestInvalidError("revision creation time is required")
    if not command.operation.strip():
        raise RequestInvalidError("revision operation is required")
    for source in command.sources:
        if not source.context or not source.type:
            raise RequestInvalidError("revision sources require context and type")
        if not is_digest(source.revision):
            raise RequestInvalidError("source revision must be a lowercase SHA-256 digest")
    return Revision(command.id, command.created_at, command.operation, command.producer,
                    dict(command.parameters), command.sources, command.files, command.bytes)
