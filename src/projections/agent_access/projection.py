"""workspace_members and agent_credentials: batch folds of the membership and credential
streams. A credential's document is the aggregate's own ``Credential``, so view and write model
cannot disagree."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from context_service.domain.agent_credentials.state import (
    Credential,
    credential_of,
    evolve_credential,
)
from context_service.domain.events import Subject
from context_service.domain.stream import Recorded
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet

MemberChange = tuple[str, Subject, str | None, datetime]  # namespace, subject, role (None: gone)


class MembersView(Protocol):
    def apply(self, changes: Sequence[MemberChange]) -> None: ...


class CredentialsView(Protocol):
    def load(self, ids: Sequence[str]) -> dict[str, Credential]: ...

    def save(self, credentials: Sequence[Credential]) -> None: ...


def member_changes(batch: Sequence[Recorded]) -> list[MemberChange]:
    changes: list[MemberChange] = []
    for recorded in batch:
        event = recorded.event
        if isinstance(event, WorkspaceMemberSet):
            changes.append((recorded.stream.namespace, event.subject, event.role, event.at))
        elif isinstance(event, WorkspaceMemberRemoved):
            changes.append((recorded.stream.namespace, event.subject, None, event.at))
    return changes


class WorkspaceMembers:
    name: str = "workspace_members"
    tables: tuple[str, ...] = ("workspace_members",)

    def apply(self, view: MembersView, batch: Sequence[Recorded]) -> None:
        changes = member_changes(batch)
        if changes:
            view.apply(changes)


def fold_credentials(batch: Sequence[Recorded],
                     current: dict[str, Credential]) -> dict[str, Credential]:
    """The credentials the batch touches, folded onto ``current`` (id -> credential)."""
    touched: dict[str, Credential] = {}
    for recorded in batch:
        key = credential_of(recorded.event)
        if key is None:
            continue
        before = touched.get(key) or current.get(key)
        after = evolve_credential(before, recorded.stream.namespace, recorded.event)
        if after is not None:
            touched[key] = after
    return touched


def credential_ids(batch: Sequence[Recorded]) -> list[str]:
    return [key for r in batch if (key := credential_of(r.event)) is not None]


class AgentCredentials:
    name: str = "agent_credentials"
    tables: tuple[str, ...] = ("agent_credentials",)

    def apply(self, view: CredentialsView, batch: Sequence[Recorded]) -> None:
        ids = credential_ids(batch)
        if not ids:
            return
        touched = fold_credentials(batch, view.load(ids))
        view.save(list(touched.values()))
