"""context_catalog: the list/get view of contexts, their grants and consumers.

The document of a context is the same ``ContextState`` the write model folds (``Folding``, the
write model's ``evolve`` in time linear in a batch), so the view and the aggregate cannot
disagree about what an event means.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from context_service.domain.context.events import ContextAdopted, ContextCreated
from context_service.domain.context.folding import Folding
from context_service.domain.context.state import ContextState
from context_service.domain.stream import Recorded
from context_service.projections.context_catalog.view import CatalogView


class ContextCatalog:
    name: str = "context_catalog"
    tables: tuple[str, ...] = ("context_catalog", "context_grants")

    def apply(self, view: CatalogView, batch: Sequence[Recorded]) -> None:
        touched: dict[uuid.UUID, list[Recorded]] = {}
        for recorded in batch:
            if recorded.stream.kind == "context":
                touched.setdefault(recorded.stream.id, []).append(recorded)
        if not touched:
            return
        current = view.load(touched.keys())
        rows: list[tuple[uuid.UUID, ContextState, int]] = []
        for stream_id, records in touched.items():
            state, created = current.get(stream_id, (ContextState(), 0))
            folding = Folding(state)  # a batch of a stream's grants costs them, not their square
            for recorded in records:
                folding.apply(recorded.event)
                if isinstance(recorded.event, ContextCreated | ContextAdopted):
                    created = recorded.position
            rows.append((stream_id, folding.state, created))
        view.save(rows)
