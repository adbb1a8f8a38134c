"""The /v1 context-set body (spec 6.2) and the ContextSet shape (spec 6.1).

The body's constraints are documented in the OpenAPI schema (``extra_json_schema``) but not
enforced by the decoder: validation is the domain's, in its order and with its messages.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

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
LABEL = {"pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "minLength": 1, "maxLength": 63}
CONTEXT_NAME = {"pattern": "^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$", "minLength": 1, "maxLength": 50}


def _text(low: int, high: int, note: str = "not blank") -> msgspec.Meta:
    return msgspec.Meta(extra_json_schema={"minLength": low, "maxLength": high,
                                           "description": note})


def _list(high: int, note: str, unique: bool = False) -> msgspec.Meta:
    schema: dict[str, Any] = {"maxItems": high, "description": note}
    if unique:
        schema["uniqueItems"] = True
    return msgspec.Meta(extra_json_schema=schema)


Label = Annotated[str, msgspec.Meta(extra_json_schema=LABEL)]
Citation = Annotated[str, msgspec.Meta(extra_json_schema={
    "pattern": "^[^/]+/.+$", "description": "<collection>/<recordId>, collection in collections"})]
Alias = Annotated[str, _text(1, 200)]


class _Body(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    pass


class VerifiedAnswerBody(_Body):
    id: Annotated[str, msgspec.Meta(extra_json_schema={
        **LABEL, "description": "distinct within the set"})] | None = None
    question: Annotated[str, _text(1, 1000)] | None = None
    answer: Annotated[str, _text(1, 8000)] | None = None
    citations: Annotated[list[Citation], _list(20, "record references")] | None = None


class DefinitionBody(_Body):
    term: Annotated[str, _text(1, 200, "not blank; distinct (normalised) among every term "
                                       "and alias of the set")] | None = None
    definition: Annotated[str, _text(1, 4000)] | None = None
    aliases: Annotated[list[Alias], _list(20, "each distinct (normalised)")] | None = None


class InstructionBody(_Body):
    id: Annotated[str, msgspec.Meta(extra_json_schema={
        **LABEL, "description": "distinct within the set"})] | None = None
    text: Annotated[str, _text(1, 4000)] | None = None


class RequiredEvidenceBody(_Body):
    id: Annotated[str, msgspec.Meta(extra_json_schema={
        **LABEL, "description": "distinct within the set"})] | None = None
    description: Annotated[str, _text(1, 1000)] | None = None
    query: Annotated[str, _text(1, 1000, "at least one word")] | None = None


class ContextSetRequest(_Body):
    """A whole version of a context set (POST: ``id``, ``name``, ``collections`` required;
    PUT: ``id`` optional and equal to the path)."""

    id: Label | None = None
    name: Annotated[str, _text(1, 100)] | None = None
    description: Annotated[str, msgspec.Meta(extra_json_schema={"maxLength": 2000})] | None = None
    collections: Annotated[list[Annotated[str, msgspec.Meta(extra_json_schema=CONTEXT_NAME)]],
                           _list(50, "context names", unique=True)] | None = None
    verified_answers: Annotated[list[VerifiedAnswerBody], _list(200, "ids distinct")] | None = None
    definitions: Annotated[list[DefinitionBody], _list(500, "terms distinct")] | None = None
    instructions: Annotated[list[InstructionBody], _list(50, "ids distinct")] | None = None
    required_evidence: Annotated[list[RequiredEvidenceBody],
                                 _list(20, "ids distinct")] | None = None
    query_templates: Annotated[list[str], _list(
        50, "ids of active query templates of the namespace", unique=True)] | None = None


def draft_of(body: ContextSetRequest) -> Draft:
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
