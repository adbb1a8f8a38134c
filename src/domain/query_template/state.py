"""The state of one query-template stream (namespace, template id), folded with ``evolve``."""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.events import Event
from context_service.domain.query_template.events import (
    Parameter,
    QueryTemplateRegistered,
    QueryTemplateReplaced,
    QueryTemplateRetired,
)
from context_service.domain.stream import StreamRef

KIND = "query_template"
RUN_KIND = "query_run"


def query_template_stream(namespace: str, template_id: str) -> StreamRef:
    return StreamRef(KIND, namespace, template_id)


def query_run_stream(namespace: str, run_id: str) -> StreamRef:
    return StreamRef(RUN_KIND, namespace, run_id)


class QueryTemplateState(msgspec.Struct, frozen=True, kw_only=True):
    exists: bool = False
    retired: bool = False
    id: str = ""
    version: int = 0
    description: str = ""
    sql: str = ""
    parameters: tuple[Parameter, ...] = ()
    max_rows: int = 100
    timeout_ms: int = 5000
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @property
    def status(self) -> str:
        return "retired" if self.retired else "active"

    @property
    def active(self) -> bool:
        return self.exists and not self.retired


def evolve(state: QueryTemplateState, event: Event) -> QueryTemplateState:
    match event:
        case QueryTemplateRegistered() | QueryTemplateReplaced():
            created = (event.at if isinstance(event, QueryTemplateRegistered)
                       else state.created_at)
            return QueryTemplateState(
                exists=True, id=event.id, version=event.version, description=event.description,
                sql=event.sql, parameters=event.parameters, max_rows=event.max_rows,
                timeout_ms=event.timeout_ms, created_at=created, updated_at=event.at)
        case QueryTemplateRetired():
            return msgspec.structs.replace(state, retired=True, updated_at=event.at)
    return state
