"""``decide`` for context sets (spec 6.2, 6.3): events or a ``DomainError``; pure.

Checks run in the documented order, the first failure wins. Which query templates are active
is an input of the command: the caller reads them when it builds the command.
"""

from __future__ import annotations

from datetime import datetime

from context_service.domain.context_set.commands import (
    ArchiveContextSet,
    ContextSetCommand,
    CreateContextSet,
    Draft,
    ReplaceContextSet,
)
from context_service.domain.context_set.events import (
    ContextSetArchived,
    ContextSetCreated,
    ContextSetReplaced,
)
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.context_set.validation import validate_draft
from context_service.domain.echoed import quoted
from context_service.domain.errors import (
    ContextSetArchivedError,
    ContextSetExistsError,
    ContextSetInvalidError,
    ContextSetNotFoundError,
    ContextSetReferenceInvalidError,
    DomainError,
)
from context_service.domain.events import Event


def decide(command: ContextSetCommand, state: ContextSetState, now: datetime) -> list[Event]:
    actor = command.actor.key
    match command:
        case CreateContextSet():
            draft = _checked(command.set_id, command.draft, command.active_templates)
            if state.exists:
                raise ContextSetExistsError()
            return [_version(ContextSetCreated, now, actor, command.set_id, 1, draft)]
        case ReplaceContextSet():
            if command.body_id is not None and command.body_id != command.set_id:
                raise ContextSetInvalidError("context set id must match the path")
            _writable(state)
            draft = _checked(command.set_id, command.draft, command.active_templates)
            if same_content(state, draft):
                return []
            return [_version(ContextSetReplaced, now, actor, state.id, state.version + 1,
                             draft)]
        case ArchiveContextSet():
            if not state.exists:
                raise ContextSetNotFoundError()
            if state.archived:
                return []
            return [ContextSetArchived(at=now, actor=actor, id=state.id, version=state.version)]
    raise DomainError(f"unknown command {type(command).__name__}")


def _writable(state: ContextSetState) -> None:
    if not state.exists:
        raise ContextSetNotFoundError()
    if state.archived:
        raise ContextSetArchivedError()


def _checked(set_id: str, draft: Draft, active_templates: frozenset[str]) -> Draft:
    validate_draft(set_id, draft)
    for template in draft.query_templates:
        if template not in active_templates:
            raise ContextSetReferenceInvalidError(f"query template {quoted(template)} not found")
    return draft


def _version(cls: type[ContextSetCreated] | type[ContextSetReplaced], now: datetime,
             actor: str, set_id: str, version: int, d: Draft) -> Event:
    return cls(at=now, actor=actor, id=set_id, version=version, name=d.name,
               description=d.description, collections=d.collections or (),
               verified_answers=d.verified_answers, definitions=d.definitions,
               instructions=d.instructions, required_evidence=d.required_evidence,
               query_templates=d.query_templates)


def same_content(state: ContextSetState, draft: Draft) -> bool:
    """Whether ``draft`` would record exactly the current version's content."""
    return (state.name, state.description, state.collections, state.verified_answers,
            state.definitions, state.instructions, state.required_evidence,
            state.query_templates) == (
        draft.name, draft.description, draft.collections, draft.verified_answers,
        draft.definitions, draft.instructions, draft.required_evidence, draft.query_templates)
