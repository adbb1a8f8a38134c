"""Membership rules under arbitrary command sequences (agent-context-api.md §3.2, §3.3): the
last owner can never be removed or demoted, an admin can never touch an owner, and ``decide``
answers events or a ``DomainError``, never anything else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from context_service.domain.errors import DomainError
from context_service.domain.events import ADMIN, Subject
from context_service.domain.workspace.commands import RemoveMember, SetMember
from context_service.domain.workspace.decide import decide
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet
from context_service.domain.workspace.roles import ROLES
from context_service.domain.workspace.state import WorkspaceState, evolve
from tests.support.hypothesis_profiles import scaled

PEOPLE = [Subject("user", n) for n in ("alice", "bob", "carol", "dave", "erin")]
actors = st.sampled_from([*PEOPLE, ADMIN])
subjects = st.sampled_from(PEOPLE)
roles = st.sampled_from([*ROLES, "", "Owner", "root"])


class Membership(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state = WorkspaceState()
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def _run(self, command: SetMember | RemoveMember) -> None:
        before = self.state
        self.now += timedelta(seconds=1)
        try:
            events = decide(command, before, self.now)
        except DomainError:
            return
        actor_role = before.role_of(command.actor)
        for event in events:
            assert isinstance(event, WorkspaceMemberSet | WorkspaceMemberRemoved)
            touched_owner = event.previous_role == "owner" or (
                isinstance(event, WorkspaceMemberSet) and event.role == "owner")
            if touched_owner:
                assert command.actor == ADMIN or actor_role == "owner", "an admin touched an owner"
            assert command.actor == ADMIN or actor_role in ("owner", "admin")
            self.state = evolve(self.state, event)

    @rule(actor=actors, subject=subjects, role=roles)
    def set_member(self, actor: Subject, subject: Subject, role: str) -> None:
        self._run(SetMember(actor=actor, subject=subject, role=role))

    @rule(actor=actors, subject=subjects)
    def remove_member(self, actor: Subject, subject: Subject) -> None:
        self._run(RemoveMember(actor=actor, subject=subject))

    @invariant()
    def keeps_an_owner_once_it_had_one(self) -> None:
        if self.state.had_owner:
            assert self.state.owners >= 1

    @invariant()
    def roles_are_valid_and_admin_is_never_a_member(self) -> None:
        assert all(m.role in ROLES for m in self.state.members.values())
        assert ADMIN.key not in self.state.members


Membership.TestCase.settings = settings(max_examples=scaled(150), stateful_step_count=40,
                                        deadline=None)
TestMembership = Membership.TestCase

