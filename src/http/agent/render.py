"""Response shapes of the ``/api/`` family, keys in the exact order of the spec."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from context_service.domain.agent_credentials.state import Credential
from context_service.domain.values import format_timestamp

Json = dict[str, Any]


def credential(c: Credential, now: datetime, token: str | None = None) -> Json:
    out: Json = {"id": c.id, "name": c.name, "scopes": list(c.scopes)}
    if c.context_set_id:
        out["contextSetId"] = c.context_set_id
    out["createdBy"] = c.created_by
    out["createdAt"] = format_timestamp(c.created_at)
    out["expiresAt"] = format_timestamp(c.expires_at)
    out["status"] = c.status(now)
    if c.revoked_at is not None:
        out["revokedAt"] = format_timestamp(c.revoked_at)
        out["revokedBy"] = c.revoked_by
    if token is not None:
        out["token"] = token
    return out
