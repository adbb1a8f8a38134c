"""``decide`` for query templates (spec 11.1, 11.2): events or a ``DomainError``.

Checks run in the documented order; the database check (9) is a port supplied with the command,
so this module stays free of adapters.
"""

from __future__ import annotations

from datetime import datetime

from context_service.domain.echoed import told
from context_service.domain.errors import (
    DomainError,
    QueryTemplateExistsError,
    QueryTemplateInvalidError,
    QueryTemplateNotFoundError,
    QueryTemplateRefusedError,
    QueryTemplateRetiredError,
)
from context_service.domain.events import Event
from context_service.domain.query_template.commands import (
    DatabaseCheck,
    QueryTemplateCommand,
    RegisterQueryTemplate,
    ReplaceQueryTemplate,
    RetireQueryTemplate,
    TemplateDraft,
)
from context_service.domain.query_template.events import (
    QueryTemplateRegistered,
    QueryTemplateReplaced,
    QueryTemplateRetired,
)
from context_service.domain.query_template.state import QueryTemplateState
from context_service.domain.query_template.validation import rewrite, validate_request


def decide(command: QueryTemplateCommand, state: QueryTemplateState,
           now: datetime) -> list[Event]:
    actor = command.actor.key
    match command:
        case RegisterQueryTemplate():
            _checked(command.template_id, command.draft, command.check)
            if state.exists:
                raise QueryTemplateExistsError()
            return [_version(QueryTemplateRegistered, now, actor, command.template_id, 1,
                             command.draft)]
        case ReplaceQueryTemplate():
            if command.body_id is not None and command.body_id != command.template_id:
                raise QueryTemplateInvalidError("query template id must match the path")
            if not state.exists:
                raise QueryTemplateNotFoundError()
            if state.retired:
                raise QueryTemplateRetiredError()
            _checked(command.template_id, command.draft, command.check)
            if same_content(state, command.draft):
                return []
            return [_version(QueryTemplateReplaced, now, actor, state.id, state.version + 1,
                             command.draft)]
        case RetireQueryTemplate():
            if not state.exists:
                raise QueryTemplateNotFoundError()
            if state.retired:
                return []
            return [QueryTemplateRetired(at=now, actor=actor, id=state.id,
                                         version=state.version)]
    raise DomainError(f"unknown command {type(command).__name__}")


def _checked(template_id: str, draft: TemplateDraft, check: DatabaseCheck) -> None:
    validate_request(template_id, draft)
    refusal = check(rewrite(draft), draft.parameters)
    if refusal is not None:
        raise QueryTemplateRefusedError(told(refusal))  # the database may quote the sql


def _version(cls: type[QueryTemplateRegistered] | type[QueryTemplateReplaced], now: datetime,
             actor: str, template_id: str, version: int, d: TemplateDraft) -> Event:
    return cls(at=now, actor=actor, id=template_id, version=version,
               description=d.description, sql=d.sql, parameters=d.parameters,
               max_rows=d.max_rows, timeout_ms=d.timeout_ms)


def same_content(state: QueryTemplateState, d: TemplateDraft) -> bool:
    return ((state.description, state.sql, state.parameters, state.max_rows, state.timeout_ms)
            == (d.description, d.sql, d.parameters, d.max_rows, d.timeout_ms))
