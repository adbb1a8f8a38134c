"""audit_log: the five audited actions of each context, complete and oldest first."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from context_service.domain.context.events import (
    AccessGranted,
    AccessRevoked,
    ConsumerAttached,
    ConsumerDetached,
    ContextAdopted,
    ContextCreated,
)
from context_service.domain.events import Event, Subject
from context_service.domain.stream import Recorded

# stream, position, seq, time, action, actor, target
AuditRow = tuple[uuid.UUID, int, int, datetime, str, Subject, Subject | None]


class AuditView(Protocol):
    def append(self, rows: list[AuditRow]) -> None: ...


def audit_entry(event: Event) -> tuple[str, Subject | None] | None:
    """The audit action and target of an event, or None when it is not audited."""
    match event:
        case ContextCreated():
            return "context.created", None
        case AccessGranted():
            return "grant.set", event.grant.subject
        case AccessRevoked():
            return "grant.revoked", event.subject
        case ConsumerAttached():
            return "consumer.attached", event.consumer.subject
        case ConsumerDetached():
            return "consumer.detached", event.subject
    return None


def actor_subject(event: Event) -> Subject:
    if isinstance(event, ContextCreated):
        return event.owner
    kind, _, name = event.actor.partition(":")
    return Subject(kind, name)


class AuditLog:
    name: str = "audit_log"
    tables: tuple[str, ...] = ("audit_log",)

    def apply(self, view: AuditView, batch: Sequence[Recorded]) -> None:
        rows: list[AuditRow] = []
        for r in batch:
            if isinstance(r.event, ContextAdopted):  # the imported history, times kept
                rows += [(r.stream.id, r.position, seq, a.time, a.action, a.subject, a.target)
                         for seq, a in enumerate(r.event.audit)]
                continue
            entry = audit_entry(r.event)
            if entry is not None:
                rows.append((r.stream.id, r.position, 0, r.event.at, entry[0],
                             actor_subject(r.event), entry[1]))
        if rows:
            view.append(rows)
