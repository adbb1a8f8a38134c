"""Stream identity and recorded events: what every reader of the log sees."""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass

import msgspec

from context_service.domain.events import Event

_STREAM_NS = uuid.UUID("6f1c3a52-58a4-4c59-9c1e-5d7f0f6b8a10")


class StreamRef(msgspec.Struct, frozen=True):
    """One aggregate's stream; its id derives deterministically from the natural key."""

    kind: str  # aggregate kind: context | pool
    namespace: str  # "" when the aggregate has none
    key: str  # natural key inside the namespace

    @property
    def id(self) -> uuid.UUID:
        return stream_id(self.kind, self.namespace, self.key)


@functools.lru_cache(maxsize=65536)
def stream_id(kind: str, namespace: str, key: str) -> uuid.UUID:
    return uuid.uuid5(_STREAM_NS, f"{kind}/{namespace}/{key}")


def context_stream(namespace: str, name: str) -> StreamRef:
    return StreamRef("context", namespace, name)


@dataclass(frozen=True, slots=True)
class Recorded:
    """An event as read back from the log."""

    position: int
    stream: StreamRef
    version: int
    name: str
    event: Event
