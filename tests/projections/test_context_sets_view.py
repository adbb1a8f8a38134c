"""The context_sets view: after any history it holds, per namespace and sorted by id, exactly
the state the write model folds for each set (archived ones included), NUL-bearing namespaces
and texts too."""

from __future__ import annotations

import pytest

from context_service.adapters.postgres.views.context_sets import ContextSetReadsSql
from context_service.bootstrap import Container
from tests.projections.set_history import IDS, NAMESPACES, write_set_history

pytestmark = pytest.mark.postgres


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_view_equals_the_folded_streams(idle_container: Container, seed: int) -> None:
    container = idle_container
    assert write_set_history(container.context_sets, seed=seed, steps=80) > 10
    container.runner("context_sets").catch_up()
    reads = ContextSetReadsSql(container.datastore)
    seen = 0
    for namespace in NAMESPACES:
        folded = [container.context_sets.load(namespace, set_id)[1] for set_id in IDS]
        expected = [state for state in folded if state.exists]
        assert list(reads.list(namespace)) == expected  # IDS are in id order
        for set_id, state in zip(IDS, folded, strict=True):
            assert reads.get(namespace, set_id) == (state if state.exists else None)
        seen += len(expected)
    assert seen
    assert reads.list("absent") == []
    assert reads.get("ns", "nul\x00id") is None
