"""Command handling for context streams: load (cached), decide, append, retry on conflict.

Streams are keyed by (namespace, name). A conflict means another writer appended first: the
command is decided again on the fresh state, so concurrent writers never lose an update; a
create that loses the race then meets a live context and answers ``already exists``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from eventsourcing.persistence import IntegrityError

from src.adapters.eventstore.store import EventStore
from src.domain.context.commands import Command
from src.domain.context.decide import authorize, decide
from src.domain.context.state import ContextState, evolve
from src.domain.errors import ConcurrencyError
from src.domain.events import Subject
from src.domain.stream import StreamRef, context_stream

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Outcome:
    state: ContextState
    position: int  # log position of the last event written, or of the head when none was


class ContextApplication:
    def __init__(self, store: EventStore, clock: Clock = utc_now, cache_size: int = 4096,
                 retries: int = 20) -> None:
        self.store = store
        self.clock = clock
        self.retries = retries
        self._cache: OrderedDict[StreamRef, tuple[int, ContextState]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def load(self, namespace: str, name: str) -> tuple[int, ContextState]:
        stream = context_stream(namespace, name)
        with self._lock:
            version, state = self._cache.get(stream, (0, ContextState()))
        newer = self.store.load(stream, after_version=version)
        for recorded in newer:
            state = evolve(state, recorded.event)
            version = recorded.version
        if newer:
            self._remember(stream, version, state)
        return version, state

    def authorize(self, namespace: str, name: str, actor: Subject, permission: str) -> ContextState:
        _, state = self.load(namespace, name)
        authorize(state, actor, permission)
        return state

    def execute(self, namespace: str, name: str, command: Command) -> Outcome:
        stream = context_stream(namespace, name)
        for _ in range(self.retries):
            version, state = self.load(namespace, name)
            events = decide(command, state, self.clock())
            if not events:
                return Outcome(state, 0)
            try:
                position = self.store.append(stream, version, events)
            except IntegrityError:
                continue
            for event in events:
                state = evolve(state, event)
            self._remember(stream, version + len(events), state)
            return Outcome(state, position)
        raise ConcurrencyError()

    def _remember(self, stream: StreamRef, version: int, state: ContextState) -> None:
        with self._lock:
            cached = self._cache.get(stream)
            if cached is None or cached[0] < version:
                self._cache[stream] = (version, state)
            self._cache.move_to_end(stream)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
