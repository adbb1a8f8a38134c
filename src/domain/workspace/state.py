"""The state of one workspace's membership stream, folded with ``evolve``."""

from __future__ import annotations

from datetime import datetime

import msgspec

from context_service.domain.events import Event, Subject
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet


class Member(msgspec.Struct, frozen=True):
    subject: Subject
    role: str
    since: datetime


class WorkspaceState(msgspec.Struct, frozen=True):
    members: dict[str, Member] = {}  # by ``kind:name``; replaced, never mutated
    had_owner: bool = False

    def role_of(self, subject: Subject) -> str | None:
        member = self.members.get(subject.key)
        return member.role if member is not None else None

    @property
    def owners(self) -> int:
        return sum(1 for m in self.members.values() if m.role == "owner")

    def listed(self) -> list[Member]:
        return [self.members[k] for k in sorted(self.members)]


def evolve(state: WorkspaceState, event: Event) -> WorkspaceState:
    match event:
        case WorkspaceMemberSet():
            members = dict(state.members)
            members[event.subject.key] = Member(event.subject, event.role, event.at)
            return WorkspaceState(members, state.had_owner or event.role == "owner")
        case WorkspaceMemberRemoved():
            members = dict(state.members)
            members.pop(event.subject.key, None)
            return WorkspaceState(members, state.had_owner)
    return state
