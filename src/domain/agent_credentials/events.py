"""Facts about a workspace's agent credentials (stream key ``credentials``).

``secret_hash`` is the keyed hash of the token; it is the one redacted field of the log
(NATS, exports and history never show it).
"""

from __future__ import annotations

from datetime import datetime

from context_service.domain.events import Event


class AgentCredentialCreated(Event, frozen=True, tag="AgentCredentialCreated"):
    credential_id: str
    name: str
    scopes: tuple[str, ...]
    context_set_id: str  # "" when unbound
    created_by: str
    expires_at: datetime
    secret_hash: str


class AgentCredentialRevoked(Event, frozen=True, tag="AgentCredentialRevoked"):
    credential_id: str


CREDENTIAL_EVENTS = (AgentCredentialCreated, AgentCredentialRevoked)
# event name -> fields that never leave the service
REDACTED: dict[str, tuple[str, ...]] = {"AgentCredentialCreated": ("secret_hash",)}
