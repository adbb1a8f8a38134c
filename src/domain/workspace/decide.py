"""``decide`` for memberships (agent-context-api.md §3.3): events or a ``DomainError``; pure.

Checks run in the documented order; ``authorize`` is the permission step, which the routes also
run before reading a body.
"""

from __future__ import annotations

from datetime import datetime

from context_service.domain.context.validation import valid_subject
from context_service.domain.echoed import quoted
from context_service.domain.errors import (
    DomainError,
    MemberNotFoundError,
    MembershipConflictError,
    MembershipInvalidError,
    RequestInvalidError,
    WorkspaceNotFoundError,
)
from context_service.domain.events import ADMIN, Event, Subject
from context_service.domain.workspace.commands import MembershipCommand, RemoveMember, SetMember
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet
from context_service.domain.workspace.roles import ROLES, acts_as_owner, subject_permits
from context_service.domain.workspace.state import WorkspaceState

OWNER_RULE = "only an owner can add, change or remove an owner"
LAST_OWNER = "a workspace keeps at least one owner"


def authorize(state: WorkspaceState, actor: Subject, permission: str) -> None:
    """A non-member and a member lacking ``permission`` are told the same: not found."""
    if not subject_permits(actor, state.role_of(actor), permission):
        raise WorkspaceNotFoundError()


def decide(command: MembershipCommand, state: WorkspaceState, now: datetime) -> list[Event]:
    authorize(state, command.actor, "members:manage")
    match command:
        case SetMember():
            return _set(command, state, now)
        case RemoveMember():
            return _remove(command, state, now)
    raise DomainError(f"unknown command {type(command).__name__}")


def _set(command: SetMember, state: WorkspaceState, now: datetime) -> list[Event]:
    subject = command.subject
    # the bootstrap administrator acts as owner everywhere and is never a member
    if subject is None or not valid_subject(subject) or subject == ADMIN or not command.role:
        raise RequestInvalidError("member requires a valid subject and role")
    if command.role not in ROLES:
        raise RequestInvalidError(f"unsupported role {quoted(command.role)}")  # cut: 0059
    current = state.role_of(subject)
    _owner_rule(command.actor, state, command.role == "owner" or current == "owner")
    if current == "owner" and command.role != "owner" and state.owners == 1:
        raise MembershipConflictError(LAST_OWNER)
    if current == command.role:
        return []
    return [WorkspaceMemberSet(at=now, actor=command.actor.key, subject=subject,
                               role=command.role, previous_role=current or "")]


def _remove(command: RemoveMember, state: WorkspaceState, now: datetime) -> list[Event]:
    current = state.role_of(command.subject)
    if current is None:
        raise MemberNotFoundError()
    _owner_rule(command.actor, state, current == "owner")
    if current == "owner" and state.owners == 1:
        raise MembershipConflictError(LAST_OWNER)
    return [WorkspaceMemberRemoved(at=now, actor=command.actor.key, subject=command.subject,
                                   previous_role=current)]


def _owner_rule(actor: Subject, state: WorkspaceState, touches_owner: bool) -> None:
    if touches_owner and not acts_as_owner(actor, state.role_of(actor)):
        raise MembershipInvalidError(OWNER_RULE)
