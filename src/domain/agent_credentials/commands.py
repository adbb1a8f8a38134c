"""Imperatives for agent credentials. Random ids and the keyed hash are computed by the caller and
passed in, so ``decide`` stays pure."""

from __future__ import annotations

import msgspec

from context_service.domain.events import Subject


class CredentialCommand(msgspec.Struct, frozen=True, kw_only=True):
    actor: Subject


class CreateCredential(CredentialCommand, frozen=True):
    credential_id: str
    name: str
    scopes: tuple[str, ...]
    context_set_id: str
    expires_in_days: int  # expiresAt = the recording time + this many 24-hour days, exactly
    secret_hash: str


class RevokeCredential(CredentialCommand, frozen=True):
    credential_id: str
