"""A log holding an event of a type this version does not know (a newer version's, written
during a rolling upgrade): the row the store writes, appended through its own group commit."""

from __future__ import annotations

import msgspec
from eventsourcing.persistence import StoredEvent

from context_service.bootstrap import Container
from context_service.domain.context.commands import CreateContext
from context_service.domain.events import Subject
from context_service.domain.stream import StreamRef

OWNER = Subject("user", "alice")
NEWER = "ContextRenamedByANewerVersion"  # a type this version does not know
NEWER_FIELDS = {"event": NEWER, "at": "2026-12-01T10:00:00.5Z", "actor": "user:bob",
                "new_name": "renamed", "reason": "tidy"}


def create(container: Container, name: str) -> int:
    """Create context ``ns/<name>``; returns its position."""
    return container.contexts.execute("ns", name, CreateContext(
        actor=OWNER, name=name, namespace="ns", type="memory", backend="pvc", size="1Gi",
        access_mode="ReadWriteOnce")).position


def record_newer(container: Container, name: str, version: int) -> int:
    """Append, to context ``ns/<name>``'s stream at ``version``, an event only a newer version
    knows (topic = event name, state = stream envelope with the event). Returns its position."""
    stream = StreamRef("context", "ns", name)
    body = msgspec.json.encode(NEWER_FIELDS)
    state = msgspec.json.encode({"k": stream.kind, "ns": stream.namespace, "key": stream.key,
                                 "e": msgspec.Raw(body)})
    [position] = container.store.group.append([StoredEvent(
        originator_id=stream.id, originator_version=version, topic=NEWER, state=state)])
    container.store.note_head(position)
    return position
