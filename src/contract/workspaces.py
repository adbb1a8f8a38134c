"""Workspaces (agent-context-api.md §3-§6): members, context sets, agent credentials and the
caller's workspace list, as msgspec Structs for the routes, the OpenAPI document and clients.

Answers are ``Closed`` and list their keys in the order the routes write them; a key omitted
when empty is ``UNSET``. Request bounds are documented only: the routes check them.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

import msgspec
from msgspec import UNSET, UnsetType

from context_service.contract.base import Closed, Request, doc, one_of
from context_service.contract.contexts import Subject, SubjectRequest
from context_service.contract.values import LABEL, NAME, TEXT, Stamp

Role = Annotated[str, one_of("owner", "admin", "member", "viewer")]
Scope = Annotated[str, one_of("context:read", "queries:run")]


def _text(limit: int, description: str = "not blank") -> msgspec.Meta:
    """A string of 1 to ``limit`` code points that is not blank."""
    return doc(description, **TEXT, minLength=1, maxLength=limit)


def _list(limit: int, description: str, **more: Any) -> msgspec.Meta:
    return doc(description, maxItems=limit, **more)


SetItemId = Annotated[str, doc("distinct within the set", **LABEL)]
# a list the route omits when empty, so never an empty one
Some = doc(minItems=1)

# --- members (§3.3) ---------------------------------------------------------------------------


class SetMemberRequest(Request, kw_only=True):
    """``PUT /v1/namespaces/{namespace}/members``: add a member or change its role."""

    REQUIRED = ("subject", "role")
    subject: SubjectRequest | None = None
    role: Role | None = None


class Member(Closed, kw_only=True):
    subject: Subject
    role: Role
    since: Stamp


class MemberList(Closed, kw_only=True):
    items: Annotated[list[Member], doc("sorted by kind:name")]


# --- the caller's workspaces --------------------------------------------------------------------


class WorkspaceRole(Closed, kw_only=True):
    namespace: str
    role: Role


class WorkspaceList(Closed, kw_only=True):
    subject: Subject
    items: Annotated[list[WorkspaceRole], doc("sorted by namespace")]


# --- context sets (§6) --------------------------------------------------------------------------


class VerifiedAnswerRequest(Request, kw_only=True):
    REQUIRED = ("id", "question", "answer")
    id: SetItemId | None = None
    question: Annotated[str, _text(1000)] | None = None
    answer: Annotated[str, _text(8000)] | None = None
    citations: Annotated[list[Annotated[str, doc(
        "<collection>/<recordId>, collection in collections", pattern="^[^/]+/.+$")]],
                         _list(20, "record references")] | None = None


class DefinitionRequest(Request, kw_only=True):
    REQUIRED = ("term", "definition")
    term: Annotated[str, _text(200, "not blank; distinct (normalised) among every term and "
                                    "alias of the set")] | None = None
    definition: Annotated[str, _text(4000)] | None = None
    aliases: Annotated[list[Annotated[str, _text(200)]],
                       _list(20, "each distinct (normalised)")] | None = None


class InstructionRequest(Request, kw_only=True):
    REQUIRED = ("id", "text")
    id: SetItemId | None = None
    text: Annotated[str, _text(4000)] | None = None


class RequiredEvidenceRequest(Request, kw_only=True):
    REQUIRED = ("id", "description", "query")
    id: SetItemId | None = None
    description: Annotated[str, _text(1000)] | None = None
    query: Annotated[str, _text(1000, "not blank; at least one word")] | None = None


class CreateContextSetRequest(Request, kw_only=True):
    """``POST /v1/namespaces/{namespace}/context-sets``: the first version of a set."""

    REQUIRED: ClassVar[tuple[str, ...]] = ("id", "name", "collections")
    id: Annotated[str, doc(**LABEL)] | None = None
    name: Annotated[str, _text(100)] | None = None
    description: Annotated[str, doc(maxLength=2000)] | None = None
    collections: Annotated[list[Annotated[str, doc(**NAME)]],
                           _list(50, "context names", uniqueItems=True)] | None = None
    verified_answers: Annotated[list[VerifiedAnswerRequest],
                                _list(200, "ids distinct")] | None = None
    definitions: Annotated[list[DefinitionRequest], _list(500, "terms distinct")] | None = None
    instructions: Annotated[list[InstructionRequest], _list(50, "ids distinct")] | None = None
    required_evidence: Annotated[list[RequiredEvidenceRequest],
                                 _list(20, "ids distinct")] | None = None
    query_templates: Annotated[list[str], _list(
        50, "ids of active query templates of the namespace", uniqueItems=True)] | None = None


class ReplaceContextSetRequest(CreateContextSetRequest, kw_only=True):
    """``PUT /v1/namespaces/{namespace}/context-sets/{id}``: a whole new version; ``id``, when
    sent, equals the path's."""

    REQUIRED = ("name", "collections")


class CuratedAnswer(Closed, kw_only=True):
    id: str
    question: str
    answer: str
    citations: Annotated[list[str], Some] | UnsetType = UNSET


class CuratedDefinition(Closed, kw_only=True):
    term: str
    definition: str
    aliases: Annotated[list[str], Some] | UnsetType = UNSET


class CuratedInstruction(Closed, kw_only=True):
    id: str
    text: str


class CuratedEvidence(Closed, kw_only=True):
    id: str
    description: str
    query: str


class ContextSet(Closed, kw_only=True):
    """A version of a context set; each curated list is omitted when empty."""

    id: str
    name: str
    description: str | UnsetType = UNSET
    status: Annotated[str, one_of("active", "archived")]
    version: Annotated[int, doc(minimum=1)]
    collections: list[str]
    verified_answers: Annotated[list[CuratedAnswer], Some] | UnsetType = UNSET
    definitions: Annotated[list[CuratedDefinition], Some] | UnsetType = UNSET
    instructions: Annotated[list[CuratedInstruction], Some] | UnsetType = UNSET
    required_evidence: Annotated[list[CuratedEvidence], Some] | UnsetType = UNSET
    query_templates: Annotated[list[str], Some] | UnsetType = UNSET
    created_at: Stamp
    updated_at: Stamp


class ContextSetItems(Closed, kw_only=True):
    items: Annotated[list[ContextSet], doc("active and archived, sorted by id")]


# --- agent credentials (§4) ---------------------------------------------------------------------


class CreateCredentialRequest(Request, kw_only=True):
    """``POST /api/w/{wsId}/agent-credentials``."""

    REQUIRED = ("name", "scopes", "expiresInDays")
    name: Annotated[str, _text(100)] | None = None
    scopes: Annotated[list[Scope], doc(minItems=1, uniqueItems=True)] | None = None
    expires_in_days: Annotated[int, doc(minimum=1, maximum=365)] | None = None
    context_set_id: Annotated[str, doc("an active context set of the workspace",
                                       minLength=1)] | None = None


class Credential(Closed, kw_only=True):
    """An agent credential as listed and read: never its token."""

    id: Annotated[str, doc(pattern="^[0-9a-f]{16}$")]
    name: str
    scopes: Annotated[list[Scope], Some]
    context_set_id: str | UnsetType = UNSET
    created_by: str
    created_at: Stamp
    expires_at: Stamp
    status: Annotated[str, one_of("active", "expired", "revoked")]
    revoked_at: Stamp | UnsetType = UNSET
    revoked_by: str | UnsetType = UNSET


class CreatedCredential(Credential, kw_only=True):
    """The answer to a create: the credential and its token, shown this once."""

    token: Annotated[str, doc(pattern="^bdk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$")]


class CredentialList(Closed, kw_only=True):
    items: Annotated[list[Credential], doc("every status, newest first")]
