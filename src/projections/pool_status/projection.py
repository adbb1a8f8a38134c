"""pool_status: each sandbox pool's recorded request and last observation.

The document is the ``PoolState`` the write model folds, as for the context catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from context_service.domain.pool.state import PoolState, evolve
from context_service.domain.stream import Recorded


class PoolView(Protocol):
    def load(self, names: Iterable[str]) -> dict[str, PoolState]: ...

    def save(self, states: list[PoolState]) -> None: ...


class PoolReads(Protocol):
    def list(self) -> list[PoolState]: ...

    def get(self, name: str) -> PoolState | None: ...


class PoolStatus:
    name: str = "pool_status"
    tables: tuple[str, ...] = ("pool_status",)

    def apply(self, view: PoolView, batch: Sequence[Recorded]) -> None:
        touched: dict[str, list[Recorded]] = {}
        for recorded in batch:
            if recorded.stream.kind == "pool":
                touched.setdefault(recorded.stream.key, []).append(recorded)
        if not touched:
            return
        current = view.load(touched.keys())
        states = []
        for name, records in touched.items():
            state = current.get(name, PoolState())
            for recorded in records:
                state = evolve(state, recorded.event)
            states.append(state)
        view.save(states)
