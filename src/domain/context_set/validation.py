"""Request validation of a context-set version (spec 6.3): bare messages, first failure wins.

Each numbered rule is checked over the whole set before the next one; a rule whose message names
an item names the first item that breaks it (for a count limit, the first item past the limit).
"""

from __future__ import annotations

from collections.abc import Sequence

from context_service.domain.context_set.commands import Draft
from context_service.domain.context_set.events import (
    Definition,
    Instruction,
    RequiredEvidence,
    VerifiedAnswer,
)
from context_service.domain.echoed import quoted
from context_service.domain.errors import ContextSetInvalidError
from context_service.domain.library.words import normalised
from context_service.domain.query.tokenizer import tokenize
from context_service.domain.values import is_context_name, is_dns_label

MAX_NAME = 100
MAX_DESCRIPTION = 2000
MAX_COLLECTIONS = 50
MAX_ANSWERS, MAX_QUESTION, MAX_ANSWER, MAX_CITATIONS = 200, 1000, 8000, 20
MAX_DEFINITIONS, MAX_TERM, MAX_DEFINITION, MAX_ALIASES = 500, 200, 4000, 20
MAX_INSTRUCTIONS, MAX_INSTRUCTION = 50, 4000
MAX_EVIDENCE, MAX_EVIDENCE_TEXT = 20, 1000
MAX_TEMPLATES = 50


def _filled(text: str, limit: int) -> bool:
    """Not blank, and at most ``limit`` code points."""
    return bool(text.strip()) and len(text) <= limit


def validate_draft(set_id: str, draft: Draft) -> tuple[str, ...]:
    """Raise ``ContextSetInvalidError`` for the first failed rule; return the collections."""
    if not is_dns_label(set_id):
        raise ContextSetInvalidError("context set id must be a lowercase Kubernetes name")
    if not _filled(draft.name, MAX_NAME):
        raise ContextSetInvalidError("context set name must be 1 to 100 characters")
    if len(draft.description) > MAX_DESCRIPTION:
        raise ContextSetInvalidError("context set description must be at most 2000 characters")
    collections = draft.collections
    if (collections is None or len(collections) > MAX_COLLECTIONS
            or len(set(collections)) != len(collections)
            or not all(is_context_name(c) for c in collections)):
        raise ContextSetInvalidError(
            "context set collections must be distinct context names (at most 50)")
    _answers(draft.verified_answers, collections)
    _definitions(draft.definitions)
    _instructions(draft.instructions)
    _evidence(draft.required_evidence)
    templates = draft.query_templates
    if len(templates) > MAX_TEMPLATES or len(set(templates)) != len(templates):
        raise ContextSetInvalidError("context set queryTemplates must be distinct (at most 50)")
    return collections


def _distinct_labels(ids: Sequence[str]) -> int | None:
    """Index of the first id that is not a DNS-1123 label or repeats an earlier one."""
    seen: set[str] = set()
    for index, item_id in enumerate(ids):
        if not is_dns_label(item_id) or item_id in seen:
            return index
        seen.add(item_id)
    return None


def _answers(answers: Sequence[VerifiedAnswer], collections: Sequence[str]) -> None:
    if len(answers) > MAX_ANSWERS or _distinct_labels([a.id for a in answers]) is not None:
        raise ContextSetInvalidError(
            "verified answer ids must be distinct lowercase Kubernetes names")
    for a in answers:
        if not (_filled(a.question, MAX_QUESTION) and _filled(a.answer, MAX_ANSWER)):
            raise ContextSetInvalidError(
                f"verified answer {quoted(a.id)} requires a question (at most 1000 characters)"
                " and an answer (at most 8000)")
    listed = set(collections)
    for a in answers:
        for index, citation in enumerate(a.citations):
            collection, sep, record = citation.partition("/")
            if index >= MAX_CITATIONS or not sep or not record or collection not in listed:
                raise ContextSetInvalidError(
                    f"verified answer {quoted(a.id)} cites {quoted(citation)}"
                    " outside the set's collections")


def _definitions(definitions: Sequence[Definition]) -> None:
    for index, d in enumerate(definitions):
        if (index >= MAX_DEFINITIONS or not _filled(d.term, MAX_TERM)
                or not _filled(d.definition, MAX_DEFINITION) or len(d.aliases) > MAX_ALIASES
                or not all(_filled(alias, MAX_TERM) for alias in d.aliases)):
            raise ContextSetInvalidError(
                f"definition {quoted(d.term)} requires a term, a definition and valid aliases")
    names = [normalised(text) for d in definitions for text in (d.term, *d.aliases)]
    if not all(names) or len(set(names)) != len(names):
        raise ContextSetInvalidError("definition terms and aliases must be distinct")


def _instructions(instructions: Sequence[Instruction]) -> None:
    seen: set[str] = set()
    for index, i in enumerate(instructions):
        if (index >= MAX_INSTRUCTIONS or not is_dns_label(i.id) or i.id in seen
                or not _filled(i.text, MAX_INSTRUCTION)):
            raise ContextSetInvalidError(
                f"instruction {quoted(i.id)} requires a distinct id and a text of at most"
                " 4000 characters")
        seen.add(i.id)


def _evidence(evidence: Sequence[RequiredEvidence]) -> None:
    seen: set[str] = set()
    for index, r in enumerate(evidence):
        if (index >= MAX_EVIDENCE or not is_dns_label(r.id) or r.id in seen
                or not _filled(r.description, MAX_EVIDENCE_TEXT)
                or len(r.query) > MAX_EVIDENCE_TEXT or not tokenize(r.query)):
            raise ContextSetInvalidError(
                f"required evidence {quoted(r.id)} requires a distinct id, a description and"
                " a query")
        seen.add(r.id)
