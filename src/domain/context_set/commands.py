"""Imperatives for context sets. Content arrives decoded but unvalidated; ``decide`` validates it
in the documented order (spec 6.2, 6.3)."""

from __future__ import annotations

import msgspec

from context_service.domain.context_set.events import (
    Definition,
    Instruction,
    RequiredEvidence,
    VerifiedAnswer,
)
from context_service.domain.events import Subject


class Draft(msgspec.Struct, frozen=True, kw_only=True):
    """The content of a version as sent: absent strings are ``""``, absent arrays ``()`` except
    ``collections``, whose absence is itself a validation failure (``None``)."""

    name: str = ""
    description: str = ""
    collections: tuple[str, ...] | None = None
    verified_answers: tuple[VerifiedAnswer, ...] = ()
    definitions: tuple[Definition, ...] = ()
    instructions: tuple[Instruction, ...] = ()
    required_evidence: tuple[RequiredEvidence, ...] = ()
    query_templates: tuple[str, ...] = ()


class ContextSetCommand(msgspec.Struct, frozen=True, kw_only=True):
    actor: Subject
    set_id: str  # the stream key: the body's id on create, the path's otherwise


class CreateContextSet(ContextSetCommand, frozen=True):
    draft: Draft
    # ids of the namespace's active query templates, read by the caller (spec 6.3 domain check)
    active_templates: frozenset[str] = frozenset()


class ReplaceContextSet(ContextSetCommand, frozen=True):
    draft: Draft
    body_id: str | None = None  # the body's id, which must equal the path when sent
    active_templates: frozenset[str] = frozenset()


class ArchiveContextSet(ContextSetCommand, frozen=True):
    pass
