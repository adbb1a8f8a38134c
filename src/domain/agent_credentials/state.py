"""The state of one workspace's credential stream, folded with ``evolve``."""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.agent_credentials.events import (
    AgentCredentialCreated,
    AgentCredentialRevoked,
)
from context_service.domain.events import Event


class Credential(msgspec.Struct, frozen=True):
    id: str
    namespace: str
    name: str
    scopes: tuple[str, ...]
    context_set_id: str
    created_by: str
    created_at: datetime
    expires_at: datetime
    secret_hash: str
    revoked_at: datetime | None = None
    revoked_by: str = ""

    def status(self, now: datetime) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if now >= self.expires_at else "active"


class CredentialsState(msgspec.Struct, frozen=True):
    namespace: str = ""
    credentials: dict[str, Credential] = {}  # by id; replaced, never mutated

    def active(self, now: datetime) -> int:
        return sum(1 for c in self.credentials.values() if c.status(now) == "active")


def evolve_credential(credential: Credential | None, namespace: str,
                      event: Event) -> Credential | None:
    """One credential's fold (shared by the aggregate and the credential view)."""
    match event:
        case AgentCredentialCreated():
            return Credential(event.credential_id, namespace, event.name, event.scopes,
                              event.context_set_id, event.created_by, event.at,
                              event.expires_at, event.secret_hash)
        case AgentCredentialRevoked() if credential is not None:
            return msgspec.structs.replace(credential, revoked_at=event.at,
                                           revoked_by=event.actor)
    return credential


def credential_of(event: Event) -> str | None:
    if isinstance(event, AgentCredentialCreated | AgentCredentialRevoked):
        return event.credential_id
    return None


def evolve(state: CredentialsState, event: Event) -> CredentialsState:
    key = credential_of(event)
    if key is None:
        return state
    updated = evolve_credential(state.credentials.get(key), state.namespace, event)
    if updated is None:
        return state
    return CredentialsState(state.namespace, {**state.credentials, key: updated})
