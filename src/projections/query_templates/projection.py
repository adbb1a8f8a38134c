"""query_templates: folds template events into one document per template stream."""

from __future__ import annotations

from collections.abc import Sequence

from context_service.domain.query_template.state import KIND, QueryTemplateState, evolve
from context_service.domain.stream import Recorded
from context_service.projections.base import fold_documents
from context_service.projections.query_templates.view import QueryTemplateView


class QueryTemplates:
    name: str = "query_templates"
    tables: tuple[str, ...] = ("query_templates",)

    def apply(self, view: QueryTemplateView, batch: Sequence[Recorded]) -> None:
        fold_documents(view, batch, KIND, QueryTemplateState, evolve)
