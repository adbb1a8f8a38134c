"""Base of every event: a frozen msgspec Struct tagged with its stable name.

Every event carries when it happened (``at``) and who caused it (``actor``, ``kind:name``), so the
audit view, the history API and the NATS envelope need nothing outside the event itself.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="event"):
    at: datetime
    actor: str


class UnknownEvent(Event, frozen=True, kw_only=True, tag="UnknownEvent"):
    """An event of a type this version does not know (a newer version's, or one since retired),
    as the log's readers see it: ``fields`` is its stored body, whole (``at`` and ``actor`` are
    read from it too), so it is published and listed like any other and folded by nothing."""

    fields: dict[str, Any]


class Subject(msgspec.Struct, frozen=True):
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"


ADMIN = Subject("service", "context-service-admin")
ANONYMOUS = Subject("user", "anonymous")
SUBJECT_KINDS = ("user", "agent", "workload", "service")
