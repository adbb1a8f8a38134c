"""Response shapes, keys in the exact order of the spec; HTTP never returns domain objects."""

from __future__ import annotations

from typing import Any

from context_service.domain.context.events import Consumer, Grant, Revision, SourceRef
from context_service.domain.context.state import ContextState
from context_service.domain.events import Subject
from context_service.domain.values import format_timestamp
from context_service.projections.reads import AuditEntry

Json = dict[str, Any]


def subject(s: Subject) -> Json:
    return {"kind": s.kind, "name": s.name}


def source(s: SourceRef) -> Json:
    return {"context": s.context, "type": s.type, "revision": s.revision}


def revision(r: Revision) -> Json:
    out: Json = {"id": r.id, "createdAt": format_timestamp(r.created_at),
                 "operation": r.operation}
    if r.producer:
        out["producer"] = r.producer
    if r.parameters:
        # by key, code point order: the views keep the map as jsonb, which loses the order
        # sent, so every route (the publish answer, revisions, get, list) writes this one
        out["parameters"] = dict(sorted(r.parameters.items()))
    if r.sources:
        out["sources"] = [source(s) for s in r.sources]
    out["files"] = r.files
    out["bytes"] = r.bytes
    return out


def grant(g: Grant) -> Json:
    return {"subject": subject(g.subject), "permissions": list(g.permissions),
            "createdAt": format_timestamp(g.created_at)}


def consumer(c: Consumer) -> Json:
    return {"subject": subject(c.subject), "kind": c.kind, "name": c.name,
            "accessMode": c.access_mode, "active": c.active, "desired": c.desired,
            "since": format_timestamp(c.since)}


def context(state: ContextState, caller: Subject | None = None,
            revisions: list[Revision] | None = None, with_history: bool = True) -> Json:
    storage: Json = {"backend": state.storage.backend, "size": state.storage.size,
                     "accessMode": state.storage.access_mode}
    if state.storage_class:
        storage["storageClass"] = state.storage_class
    out: Json = {"name": state.name, "namespace": state.namespace, "type": state.type,
                 "status": state.status, "storage": storage,
                 "attachment": {"kind": "pvc", "claimName": f"context-{state.name}"}}
    if state.current_revision:
        out["currentRevision"] = state.current_revision
    history = revisions if revisions is not None else (
        list(state.revisions) if with_history else [])
    if history:
        out["revisions"] = [revision(r) for r in history]
    if caller is not None:
        access = state.permissions_of(caller)
        if access:
            out["effectiveAccess"] = list(access)
        consumers = state.consumers()
        if consumers:
            out["consumers"] = [consumer(c) for c in consumers]
    return out


def audit_event(entry: AuditEntry) -> Json:
    out: Json = {"time": format_timestamp(entry.time), "action": entry.action,
                 "subject": subject(entry.subject)}
    if entry.target is not None:
        out["target"] = subject(entry.target)
    return out
