"""The /v1 context-set body as the domain's draft (spec 6.2), and the ContextSet answer as
rendered (spec 6.1; its contract is ``contract.workspaces.ContextSet``).

The body's bounds are documented by its contract, not enforced by the decoder: validation is the
domain's, in its order and with its messages.
"""

from __future__ import annotations

from typing import Any

from context_service.contract.workspaces import CreateContextSetRequest
from context_service.domain.context_set.commands import Draft
from context_service.domain.context_set.events import (
    Definition,
    Instruction,
    RequiredEvidence,
    VerifiedAnswer,
)
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.values import format_timestamp

Json = dict[str, Any]


def draft_of(body: CreateContextSetRequest) -> Draft:
    """The version a create or replace body describes, for the domain to validate."""
    return Draft(
        name=body.name or "", description=body.description or "",
        collections=None if body.collections is None else tuple(body.collections),
        verified_answers=tuple(
            VerifiedAnswer(id=a.id or "", question=a.question or "", answer=a.answer or "",
                           citations=tuple(a.citations or ()))
            for a in body.verified_answers or ()),
        definitions=tuple(
            Definition(term=d.term or "", definition=d.definition or "",
                       aliases=tuple(d.aliases or ()))
            for d in body.definitions or ()),
        instructions=tuple(Instruction(id=i.id or "", text=i.text or "")
                           for i in body.instructions or ()),
        required_evidence=tuple(
            RequiredEvidence(id=r.id or "", description=r.description or "", query=r.query or "")
            for r in body.required_evidence or ()),
        query_templates=tuple(body.query_templates or ()))


# --- responses --------------------------------------------------------------------------------

def verified_answer(a: VerifiedAnswer) -> Json:
    out: Json = {"id": a.id, "question": a.question, "answer": a.answer}
    if a.citations:
        out["citations"] = list(a.citations)
    return out


def definition(d: Definition) -> Json:
    out: Json = {"term": d.term, "definition": d.definition}
    if d.aliases:
        out["aliases"] = list(d.aliases)
    return out


def items_of(state: ContextSetState) -> Json:
    """The curated items, each list omitted when empty, in the shape's key order."""
    out: Json = {}
    if state.verified_answers:
        out["verifiedAnswers"] = [verified_answer(a) for a in state.verified_answers]
    if state.definitions:
        out["definitions"] = [definition(d) for d in state.definitions]
    if state.instructions:
        out["instructions"] = [{"id": i.id, "text": i.text} for i in state.instructions]
    if state.required_evidence:
        out["requiredEvidence"] = [{"id": r.id, "description": r.description, "query": r.query}
                                   for r in state.required_evidence]
    return out


def context_set(state: ContextSetState) -> Json:
    out: Json = {"id": state.id, "name": state.name}
    if state.description:
        out["description"] = state.description
    out.update(status=state.status, version=state.version, collections=list(state.collections))
    out.update(items_of(state))
    if state.query_templates:
        out["queryTemplates"] = list(state.query_templates)
    assert state.created_at is not None and state.updated_at is not None
    out["createdAt"] = format_timestamp(state.created_at)
    out["updatedAt"] = format_timestamp(state.updated_at)
    return out
