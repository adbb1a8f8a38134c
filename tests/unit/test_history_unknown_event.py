"""The history route lists an event of a type this version does not know as it was stored: its
stored name and its stored fields (``at`` and ``actor`` in their own keys)."""

from __future__ import annotations

from datetime import UTC, datetime

from context_service.domain.events import UnknownEvent
from context_service.domain.stream import Recorded, StreamRef
from context_service.http.routes.timeline import _item

FIELDS = {"event": "ContextRenamedByANewerVersion", "at": "2026-12-01T10:00:00.5Z",
          "actor": "user:bob", "new_name": "renamed", "reason": "tidy"}


def test_an_unknown_event_is_listed_by_its_stored_name_and_fields() -> None:
    event = UnknownEvent(at=datetime(2026, 12, 1, 10, 0, 0, 500000, tzinfo=UTC),
                         actor="user:bob", fields=FIELDS)
    recorded = Recorded(41, StreamRef("context", "ns", "kept"), 2,
                        "ContextRenamedByANewerVersion", event)
    assert _item(recorded) == {
        "position": 41, "time": "2026-12-01T10:00:00.5Z",
        "name": "ContextRenamedByANewerVersion", "actor": "user:bob",
        "data": {"new_name": "renamed", "reason": "tidy"}}
