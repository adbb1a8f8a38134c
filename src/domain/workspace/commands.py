"""Imperatives for a workspace's membership; ``actor`` is the caller."""

from __future__ import annotations

import msgspec

from context_service.domain.events import Subject


class MembershipCommand(msgspec.Struct, frozen=True, kw_only=True):
    actor: Subject


class SetMember(MembershipCommand, frozen=True):
    subject: Subject | None
    role: str


class RemoveMember(MembershipCommand, frozen=True):
    subject: Subject
