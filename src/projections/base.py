"""What a projection is: a named, batch-at-a-time fold of recorded events into a view.

The runner hands each batch to ``apply`` together with a view bound to the batch's transaction;
view changes and the tracking position commit together (exactly once).

What ``apply`` may count on, and must allow:
- it sees only events of types this version knows: the runner passes over the others;
- it may be called again on parts of a batch whose first call raised (each part under a
  savepoint, to find the event at fault), so its effects belong in the view, not in memory
  that a rolled-back part would leave changed;
- an exception is never swallowed: the projection is held at the event it fails on.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, TypeVar

from context_service.domain.events import Event
from context_service.domain.stream import Recorded


class Projection(Protocol):
    name: str
    tables: tuple[str, ...]  # emptied by a rebuild

    def apply(self, view: Any, batch: Sequence[Recorded]) -> None: ...


S = TypeVar("S")


class DocumentView(Protocol[S]):
    """A view holding one folded state document per stream, with its namespace."""

    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, S]: ...

    def save(self, rows: list[tuple[uuid.UUID, str, S]]) -> None: ...


def fold_documents(view: DocumentView[S], batch: Sequence[Recorded], kind: str,
                      initial: Callable[[], S], evolve: Callable[[S, Event], S]) -> None:
    """Fold the batch's events of one aggregate kind into each touched stream's document."""
    touched: dict[uuid.UUID, tuple[str, list[Recorded]]] = {}
    for recorded in batch:
        if recorded.stream.kind == kind:
            entry = touched.setdefault(recorded.stream.id, (recorded.stream.namespace, []))
            entry[1].append(recorded)
    if not touched:
        return
    current = view.load(touched.keys())
    rows: list[tuple[uuid.UUID, str, S]] = []
    for stream_id, (namespace, records) in touched.items():
        state = current.get(stream_id) or initial()
        for recorded in records:
            state = evolve(state, recorded.event)
        rows.append((stream_id, namespace, state))
    view.save(rows)


def by_stream(batch: Sequence[Recorded], kind: str,
              types: tuple[type[Event], ...]) -> dict[uuid.UUID, list[Recorded]]:
    """The batch's events of these types in streams of one aggregate kind, grouped per stream
    in log order."""
    touched: dict[uuid.UUID, list[Recorded]] = {}
    for recorded in batch:
        if recorded.stream.kind == kind and isinstance(recorded.event, types):
            touched.setdefault(recorded.stream.id, []).append(recorded)
    return touched
