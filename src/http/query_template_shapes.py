"""The /v1 query-template body and the QueryTemplate shape (spec 11.1). Constraints are
validated by the domain, in its order and with its messages."""

from __future__ import annotations

from typing import Any

import msgspec

from context_service.domain.query_template.commands import TemplateDraft
from context_service.domain.query_template.events import Parameter
from context_service.domain.query_template.state import QueryTemplateState
from context_service.domain.values import format_timestamp


class _Body(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    pass


class ParameterBody(_Body):
    name: str = ""
    type: str = ""
    required: bool = False
    default: Any = None


class QueryTemplateRequest(_Body):
    id: str | None = None
    description: str = ""
    sql: str = ""
    parameters: list[ParameterBody] | None = None
    max_rows: int = 100
    timeout_ms: int = 5000


def draft_of(body: QueryTemplateRequest) -> TemplateDraft:
    return TemplateDraft(
        description=body.description, sql=body.sql,
        parameters=tuple(Parameter(name=p.name, type=p.type, required=p.required,
                                   default=p.default) for p in body.parameters or ()),
        max_rows=body.max_rows, timeout_ms=body.timeout_ms)


def parameter_json(p: Parameter) -> dict[str, Any]:
    out: dict[str, Any] = {"name": p.name, "type": p.type, "required": p.required}
    if p.default is not None:
        out["default"] = p.default
    return out


def query_template(state: QueryTemplateState) -> dict[str, Any]:
    assert state.created_at is not None and state.updated_at is not None
    return {"id": state.id, "description": state.description, "sql": state.sql,
            "parameters": [parameter_json(p) for p in state.parameters],
            "maxRows": state.max_rows, "timeoutMs": state.timeout_ms, "status": state.status,
            "version": state.version, "createdAt": format_timestamp(state.created_at),
            "updatedAt": format_timestamp(state.updated_at)}
