"""The /v1 query-template body as a draft, and the QueryTemplate answer (spec 11.1). Constraints
are validated by the domain, in its order and with its messages; the Structs are the contract's
(``contract.query_templates``)."""

from __future__ import annotations

from typing import Any

from context_service.contract.query_templates import QueryTemplateRequest
from context_service.domain.query_template.commands import TemplateDraft
from context_service.domain.query_template.events import Parameter
from context_service.domain.query_template.state import QueryTemplateState
from context_service.domain.values import format_timestamp


def draft_of(body: QueryTemplateRequest) -> TemplateDraft:
    """The draft the domain validates: an absent key is its default."""
    return TemplateDraft(
        description=body.description or "", sql=body.sql or "",
        parameters=tuple(Parameter(name=p.name or "", type=p.type or "",
                                   required=bool(p.required), default=p.default)
                         for p in body.parameters or ()),
        max_rows=100 if body.max_rows is None else body.max_rows,
        timeout_ms=5000 if body.timeout_ms is None else body.timeout_ms)


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
