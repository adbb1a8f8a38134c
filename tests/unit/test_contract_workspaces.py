"""The workspace contract states the domain's own rules (credential scopes and lifetimes, roles),
and a context set as the route renders it decodes into its answer Struct, curated lists included
only when they hold something."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from context_service.contract.schema import components
from context_service.contract.workspaces import (
    ContextSet,
    CreateCredentialRequest,
    CreatedCredential,
    Credential,
    Member,
    ReplaceContextSetRequest,
)
from context_service.domain.agent_credentials.decide import MAX_DAYS, MIN_DAYS
from context_service.domain.context_set.events import Definition, Instruction, VerifiedAnswer
from context_service.domain.context_set.state import ContextSetState
from context_service.domain.workspace.roles import SCOPES
from context_service.http.context_set_shapes import context_set

REF = "#/components/schemas/{name}"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def schema_of(struct: type) -> dict[str, Any]:
    found: dict[str, Any] = components([struct], REF)[struct.__name__]
    return found


def test_the_credential_body_documents_the_domain_scopes_and_lifetime() -> None:
    properties = schema_of(CreateCredentialRequest)["properties"]
    assert properties["scopes"]["items"]["enum"] == list(SCOPES)
    days = properties["expiresInDays"]
    assert (days["minimum"], days["maximum"]) == (MIN_DAYS, MAX_DAYS)
    assert schema_of(Credential)["properties"]["scopes"]["items"]["enum"] == list(SCOPES)


def test_the_created_credential_is_a_credential_with_its_token_last() -> None:
    created = schema_of(CreatedCredential)
    listed = schema_of(Credential)
    assert list(created["properties"]) == [*listed["properties"], "token"]
    assert created["required"] == [*listed["required"], "token"]
    assert created["additionalProperties"] is False


def test_a_replace_body_leaves_the_id_optional_and_a_create_requires_it() -> None:
    assert schema_of(ReplaceContextSetRequest)["required"] == ["name", "collections"]
    create = components([ReplaceContextSetRequest.__mro__[1]], REF)
    assert create["CreateContextSetRequest"]["required"] == ["id", "name", "collections"]


def test_member_roles_are_the_four_of_the_specification() -> None:
    role = schema_of(Member)["properties"]["role"]
    assert role["enum"] == ["owner", "admin", "member", "viewer"]


def state(**items: Any) -> ContextSetState:
    return msgspec.structs.replace(
        ContextSetState(exists=True, id="support", name="Support", version=1,
                        collections=("faq",), created_at=NOW, updated_at=NOW), **items)


@pytest.mark.parametrize("items", [
    {},
    {"description": "the desk",
     "verified_answers": (VerifiedAnswer(id="a", question="q?", answer="a.", citations=()),),
     "definitions": (Definition(term="sla", definition="a promise", aliases=("slo",)),),
     "instructions": (Instruction(id="cite", text="Cite the record."),),
     "query_templates": ("by-day",)},
])
def test_a_rendered_context_set_decodes_into_its_answer(items: dict[str, Any]) -> None:
    rendered = msgspec.json.encode(context_set(state(**items)))
    decoded = msgspec.json.decode(rendered, type=ContextSet, strict=True)
    assert msgspec.json.encode(decoded) == rendered  # same keys, same order


def test_a_curated_list_is_optional_and_documented_as_never_empty() -> None:
    schema = schema_of(ContextSet)
    for key in ("verifiedAnswers", "definitions", "instructions", "requiredEvidence",
                "queryTemplates"):
        assert schema["properties"][key]["minItems"] == 1
        assert key not in schema["required"]
