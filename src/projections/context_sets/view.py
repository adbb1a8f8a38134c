"""The context_sets view's ports: the projection's write side and the reads HTTP uses."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Protocol

from context_service.domain.context_set.state import ContextSetState


class ContextSetView(Protocol):
    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, ContextSetState]:
        """Current documents of these streams."""

    def save(self, rows: list[tuple[uuid.UUID, str, ContextSetState]]) -> None:
        """Replace the documents of these streams: (stream id, namespace, state)."""


class ContextSetReads(Protocol):
    def list(self, namespace: str) -> Sequence[ContextSetState]:
        """Every set of the namespace, both statuses, sorted by id."""

    def get(self, namespace: str, set_id: str) -> ContextSetState | None:
        """The set, archived or not; None when it was never created."""
