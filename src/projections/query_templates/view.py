"""The query_templates view's ports: the projection's write side and the reads HTTP uses."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Protocol

from context_service.domain.query_template.state import QueryTemplateState


class QueryTemplateView(Protocol):
    def load(self, stream_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, QueryTemplateState]: ...

    def save(self, rows: list[tuple[uuid.UUID, str, QueryTemplateState]]) -> None: ...


class QueryTemplateReads(Protocol):
    def list(self, namespace: str) -> Sequence[QueryTemplateState]:
        """Every template of the namespace, both statuses, sorted by id."""

    def get(self, namespace: str, template_id: str) -> QueryTemplateState | None: ...

    def active_ids(self, namespace: str) -> frozenset[str]: ...
