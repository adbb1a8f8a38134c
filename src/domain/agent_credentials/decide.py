"""``decide`` for agent credentials (agent-context-api.md §4.2, §4.3): events or a
``DomainError``; pure. The permission, body and scope checks run before, in the route, in the
documented order; what must hold at commit time is decided here."""

from __future__ import annotations

from datetime import datetime, timedelta

from context_service.domain.agent_credentials.commands import (
    CreateCredential,
    CredentialCommand,
    RevokeCredential,
)
from context_service.domain.agent_credentials.events import (
    AgentCredentialCreated,
    AgentCredentialRevoked,
)
from context_service.domain.agent_credentials.state import CredentialsState
from context_service.domain.errors import (
    CredentialIdTakenError,
    CredentialLimitError,
    CredentialNotFoundError,
    DomainError,
)
from context_service.domain.events import Event

ACTIVE_LIMIT = 50
MIN_DAYS, MAX_DAYS = 1, 365


def decide(command: CredentialCommand, state: CredentialsState, now: datetime) -> list[Event]:
    match command:
        case CreateCredential():
            if state.active(now) >= ACTIVE_LIMIT:
                raise CredentialLimitError(ACTIVE_LIMIT)
            if command.credential_id in state.credentials:
                raise CredentialIdTakenError()
            return [AgentCredentialCreated(
                at=now, actor=command.actor.key, credential_id=command.credential_id,
                name=command.name, scopes=command.scopes, context_set_id=command.context_set_id,
                created_by=command.actor.key,
                expires_at=now + timedelta(days=command.expires_in_days),
                secret_hash=command.secret_hash)]
        case RevokeCredential():
            credential = state.credentials.get(command.credential_id)
            if credential is None:
                raise CredentialNotFoundError()
            if credential.revoked_at is not None:
                return []  # a repeated revoke is harmless
            return [AgentCredentialRevoked(at=now, actor=command.actor.key,
                                           credential_id=command.credential_id)]
    raise DomainError(f"unknown command {type(command).__name__}")
