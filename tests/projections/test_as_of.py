"""Reads as of a point equal the state computed by folding the events up to that point."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_service.adapters.eventstore.timeline import Timeline
from context_service.bootstrap import Container
from context_service.domain.context.state import ContextState
from context_service.projections.context_catalog.projection import ContextCatalog
from tests.projections.history import NAMES, write_history
from tests.support.hypothesis_profiles import scaled

pytestmark = pytest.mark.postgres


class MemoryCatalog:
    """The catalog view in memory: what the projection would show at a position."""

    def __init__(self) -> None:
        self.rows: dict[uuid.UUID, tuple[ContextState, int]] = {}

    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, tuple[ContextState, int]]:
        return {s: self.rows[s] for s in stream_ids if s in self.rows}

    def save(self, rows: list[tuple[uuid.UUID, ContextState, int]]) -> None:
        for sid, state, created in rows:
            self.rows[sid] = (state, created)


@settings(max_examples=scaled(5), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), cut=st.floats(0, 1))
def test_as_of_equals_the_fold_of_the_prefix(idle_container: Container, seed: int,
                                             cut: float) -> None:
    store = idle_container.store
    write_history(idle_container.contexts, seed=seed, steps=40)
    for runner in idle_container.runners.values():
        runner.catch_up()
    head = store.head()
    point = int(head * cut)
    prefix = [r for r in store.read(0, 100_000) if r.position <= point]
    view = MemoryCatalog()
    ContextCatalog().apply(view, prefix)
    timeline = Timeline(store)
    for name in NAMES:
        expected = next((s for s, _ in view.rows.values() if s.name == name), ContextState())
        assert timeline.state_as_of("ns", name, position=point) == expected
    live = sorted((s.name for s, _ in view.rows.values() if s.live))
    assert sorted(s.name for s in timeline.namespace_as_of("ns", position=point) if s.live) == live
    if prefix:
        moment = prefix[-1].event.at
        by_time = {s.name: s for s in timeline.namespace_as_of("ns", time=moment)}
        for state, _ in view.rows.values():
            assert by_time[state.name].live == state.live or any(
                r.event.at == moment and r.position > point for r in store.read(point, 100))
