"""Base of every event: a frozen msgspec Struct tagged with its stable name.

Every event carries when it happened (``at``) and who caused it (``actor``, ``kind:name``), so the
audit view, the history API and the NATS envelope need nothing outside the event itself.
"""

from __future__ import annotations

from datetime import datetime

import msgspec


class Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="event"):
    at: datetime
    actor: str


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
