"""query_templates: folds template events into one document per template stream."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from context_service.domain.query_template.state import KIND, QueryTemplateState, evolve
from context_service.domain.stream import Recorded
from context_service.projections.query_templates.view import QueryTemplateView


class QueryTemplates:
    name: str = "query_templates"
    tables: tuple[str, ...] = ("query_templates",)

    def apply(self, view: QueryTemplateView, batch: Sequence[Recorded]) -> None:
        touched: dict[uuid.UUID, tuple[str, list[Recorded]]] = {}
        for recorded in batch:
            if recorded.stream.kind == KIND:
                entry = touched.setdefault(recorded.stream.id, (recorded.stream.namespace, []))
                entry[1].append(recorded)
        if not touched:
            return
        current = view.load(touched.keys())
        rows: list[tuple[uuid.UUID, str, QueryTemplateState]] = []
        for stream_id, (namespace, records) in touched.items():
            state = current.get(stream_id, QueryTemplateState())
            for recorded in records:
                state = evolve(state, recorded.event)
            rows.append((stream_id, namespace, state))
        view.save(rows)
