"""Command handling for workspace memberships and agent credentials (one stream each per
namespace): the stream applications the membership and credential routes use."""

from __future__ import annotations

import asyncio

from context_service.adapters.eventstore.application import (
    Clock,
    Outcome,
    StreamApplication,
    utc_now,
)
from context_service.adapters.eventstore.store import EventStore
from context_service.domain.agent_credentials import decide as credential_decide
from context_service.domain.agent_credentials.commands import CredentialCommand
from context_service.domain.agent_credentials.state import CredentialsState
from context_service.domain.agent_credentials.state import evolve as credential_evolve
from context_service.domain.errors import DomainError
from context_service.domain.events import Subject
from context_service.domain.stream import StreamRef
from context_service.domain.workspace import decide as workspace_decide
from context_service.domain.workspace.commands import MembershipCommand
from context_service.domain.workspace.state import WorkspaceState
from context_service.domain.workspace.state import evolve as workspace_evolve

WORKSPACE = "workspace"
CREDENTIALS = "agent_credentials"


def workspace_stream(namespace: str) -> StreamRef:
    return StreamRef(WORKSPACE, namespace, "members")


def credentials_stream(namespace: str) -> StreamRef:
    return StreamRef(CREDENTIALS, namespace, "credentials")


class WorkspaceApplication(StreamApplication[WorkspaceState]):
    def __init__(self, store: EventStore, clock: Clock = utc_now) -> None:
        super().__init__(store, WORKSPACE, WorkspaceState, workspace_evolve,
                         workspace_decide.decide, clock)

    def role_of(self, namespace: str, subject: Subject, fresh: bool = False) -> str | None:
        stream = workspace_stream(namespace)
        _, state = self.load_stream(stream) if fresh else self.cached(stream)
        return state.role_of(subject)

    def authorize(self, namespace: str, actor: Subject, permission: str,
                  fresh: bool = False) -> WorkspaceState:
        """On the cached state; a refusal is confirmed against the log before it is given.
        ``fresh``: on the log now, for a write whose command does not check the membership
        again (a role another replica changed a moment ago counts)."""
        stream = workspace_stream(namespace)
        if not fresh:
            _, state = self.cached(stream)
            try:
                workspace_decide.authorize(state, actor, permission)
                return state
            except DomainError:
                pass
        _, state = self.load_stream(stream)
        workspace_decide.authorize(state, actor, permission)
        return state

    async def authorize_async(self, namespace: str, actor: Subject,
                              permission: str) -> WorkspaceState:
        stream = workspace_stream(namespace)
        _, state = self.cached(stream)
        try:
            workspace_decide.authorize(state, actor, permission)
        except DomainError:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, self.authorize, namespace, actor,
                                              permission)
        return state

    def execute(self, namespace: str, command: MembershipCommand) -> Outcome[WorkspaceState]:
        return self.execute_on(workspace_stream(namespace), command)


class CredentialApplication(StreamApplication[CredentialsState]):
    def __init__(self, store: EventStore, clock: Clock = utc_now) -> None:
        super().__init__(store, CREDENTIALS, CredentialsState, credential_evolve,
                         credential_decide.decide, clock)

    def execute(self, namespace: str, command: CredentialCommand) -> Outcome[CredentialsState]:
        return self.execute_on(credentials_stream(namespace), command)
