"""context_sets: every set's status and current version, per namespace (spec 12.5).

The document of a set is the ``ContextSetState`` the write model folds, as for the context
catalog. (Token counts of the set's items join it with the token counter of issue 11.)
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from context_service.domain.context_set.state import KIND, ContextSetState, evolve
from context_service.domain.stream import Recorded
from context_service.projections.context_sets.view import ContextSetView


class ContextSets:
    name: str = "context_sets"
    tables: tuple[str, ...] = ("context_sets",)

    def apply(self, view: ContextSetView, batch: Sequence[Recorded]) -> None:
        touched: dict[uuid.UUID, tuple[str, list[Recorded]]] = {}
        for recorded in batch:
            if recorded.stream.kind == KIND:
                entry = touched.setdefault(recorded.stream.id, (recorded.stream.namespace, []))
                entry[1].append(recorded)
        if not touched:
            return
        current = view.load(touched.keys())
        rows: list[tuple[uuid.UUID, str, ContextSetState]] = []
        for stream_id, (namespace, records) in touched.items():
            state = current.get(stream_id, ContextSetState())
            for recorded in records:
                state = evolve(state, recorded.event)
            rows.append((stream_id, namespace, state))
        view.save(rows)
