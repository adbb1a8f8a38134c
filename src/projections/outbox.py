"""Ports of the outbox relay: what it reads (``EventFeed``) and where it keeps its place.

The relay publishes every stored event, in log order, to the outside (NATS JetStream). It knows the
event store only through these Protocols, so it can be tested against in-memory versions (below)
and wired to the real store in ``bootstrap``.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol


class OutboxEvent(Protocol):
    """One stored event as the relay sees it: its log position plus the envelope fields.

    ``namespace`` and ``actor`` are ``None`` when the event has none. ``data`` is anything msgspec
    encodes as a JSON object (a dict or a Struct of the event's fields).
    """

    @property
    def position(self) -> int: ...
    @property
    def event_id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def aggregate(self) -> str: ...
    @property
    def aggregate_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def timestamp(self) -> datetime: ...
    @property
    def namespace(self) -> str | None: ...
    @property
    def actor(self) -> str | None: ...
    @property
    def data(self) -> object: ...


class EventFeed(Protocol):
    """The event log, read forward by position. Positions increase strictly; gaps are allowed."""

    def read(self, after: int, limit: int) -> Sequence[OutboxEvent]:
        """Up to ``limit`` events with position > ``after``, in ascending position order."""
        ...

    def wait(self, after: int, timeout: float) -> None:
        """Return once an event past ``after`` may exist, or after ``timeout`` seconds at most."""
        ...


class PositionStore(Protocol):
    """The relay's checkpoint: the last position the outside acknowledged (0 before any)."""

    def load(self) -> int: ...

    def save(self, position: int) -> None: ...


class MemoryFeed:
    """A thread-safe in-memory ``EventFeed`` for tests and benchmarks."""

    def __init__(self, events: Iterable[OutboxEvent] = ()) -> None:
        self._events: list[OutboxEvent] = []
        self._positions: list[int] = []
        self._changed = threading.Condition()
        self.extend(events)

    def extend(self, events: Iterable[OutboxEvent]) -> None:
        """Append events; their positions must continue to increase."""
        with self._changed:
            for event in events:
                if self._positions and event.position <= self._positions[-1]:
                    raise ValueError(f"position {event.position} does not increase the log")
                self._events.append(event)
                self._positions.append(event.position)
            self._changed.notify_all()

    @property
    def head(self) -> int:
        with self._changed:
            return self._positions[-1] if self._positions else 0

    def read(self, after: int, limit: int) -> Sequence[OutboxEvent]:
        with self._changed:
            start = bisect_right(self._positions, after)
            return self._events[start : start + limit]

    def wait(self, after: int, timeout: float) -> None:
        with self._changed:
            self._changed.wait_for(
                lambda: bool(self._positions) and self._positions[-1] > after, timeout
            )


class MemoryPositionStore:
    """An in-memory ``PositionStore``; ``saves`` counts writes (the relay batches them)."""

    def __init__(self, position: int = 0) -> None:
        self._position = position
        self._lock = threading.Lock()
        self.saves = 0

    def load(self) -> int:
        with self._lock:
            return self._position

    def save(self, position: int) -> None:
        with self._lock:
            if position < self._position:
                raise ValueError(f"checkpoint moved back from {self._position} to {position}")
            self._position = position
            self.saves += 1
