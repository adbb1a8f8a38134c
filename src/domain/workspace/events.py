"""Facts about a workspace's membership (stream key ``members``)."""

from __future__ import annotations

from context_service.domain.events import Event, Subject


class WorkspaceMemberSet(Event, frozen=True, tag="WorkspaceMemberSet"):
    subject: Subject
    role: str
    previous_role: str  # "" for a new member


class WorkspaceMemberRemoved(Event, frozen=True, tag="WorkspaceMemberRemoved"):
    subject: Subject
    previous_role: str


WORKSPACE_EVENTS = (WorkspaceMemberSet, WorkspaceMemberRemoved)
