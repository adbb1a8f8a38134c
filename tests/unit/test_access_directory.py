"""The in-process access directory: answers from memory while the local runner feeds it, never
keeps a load that overlapped a batch, forgets everything on reset, and reads the views when the
runner is elsewhere."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from context_service.domain.agent_credentials.events import (
    AgentCredentialCreated,
    AgentCredentialRevoked,
)
from context_service.domain.agent_credentials.state import Credential
from context_service.domain.events import Event, Subject
from context_service.domain.stream import Recorded, StreamRef
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet
from context_service.projections.agent_access.directory import AccessDirectory

AT = datetime(2026, 1, 1, tzinfo=UTC)
ALICE = Subject("user", "alice")


def recorded(event: Event, kind: str = "agent_credentials", position: int = 1) -> Recorded:
    key = "credentials" if kind == "agent_credentials" else "members"
    return Recorded(position, StreamRef(kind, "acme", key), 1, type(event).__name__, event)


def created(cid: str) -> AgentCredentialCreated:
    return AgentCredentialCreated(at=AT, actor="user:alice", credential_id=cid, name="n",
                                  scopes=("context:read",), context_set_id="",
                                  created_by="user:alice", expires_at=AT + timedelta(days=1),
                                  secret_hash="h" * 64)


class Reads:
    def __init__(self) -> None:
        self.credentials: dict[str, Credential] = {}
        self.roles: dict[tuple[str, str], str] = {}
        self.calls = 0
        self.during_load: Any = None

    def credential(self, credential_id: str) -> Credential | None:
        self.calls += 1
        found = self.credentials.get(credential_id)
        if self.during_load is not None:
            hook, self.during_load = self.during_load, None
            hook()
        return found

    def role(self, namespace: str, subject: Subject) -> str | None:
        self.calls += 1
        return self.roles.get((namespace, subject.key))


def view_row(cid: str, revoked: bool = False) -> Credential:
    return Credential(cid, "acme", "n", ("context:read",), "", "user:alice", AT,
                      AT + timedelta(days=1), "h" * 64, AT if revoked else None,
                      "user:alice" if revoked else "")


def test_answers_from_memory_once_loaded_and_follows_batches() -> None:
    reads = Reads()
    reads.credentials["a"] = view_row("a")
    directory = AccessDirectory(reads, live=lambda: True)
    assert directory.credential("a") == view_row("a")
    assert directory.credential("a") == view_row("a")
    assert reads.calls == 1
    directory.applied([recorded(AgentCredentialRevoked(at=AT, actor="user:bob",
                                                       credential_id="a"))])
    found = directory.credential("a")
    assert found is not None and found.revoked_at == AT and found.revoked_by == "user:bob"
    directory.applied([recorded(created("b"))])
    assert directory.credential("b") is not None and reads.calls == 1


def test_a_load_overlapping_a_batch_is_not_kept() -> None:
    reads = Reads()
    reads.credentials["a"] = view_row("a")  # the view before the revocation commits
    directory = AccessDirectory(reads, live=lambda: True)

    def revocation_commits() -> None:
        reads.credentials["a"] = view_row("a", revoked=True)
        directory.applied([recorded(AgentCredentialRevoked(at=AT, actor="user:alice",
                                                           credential_id="a"))])

    reads.during_load = revocation_commits
    assert directory.credential("a") == view_row("a")  # answered, but not remembered
    assert directory.credential("a") == view_row("a", revoked=True)
    assert reads.calls == 2


def test_roles_follow_membership_events_including_removal() -> None:
    reads = Reads()
    reads.roles[("acme", "user:alice")] = "admin"
    directory = AccessDirectory(reads, live=lambda: True)
    assert directory.role("acme", ALICE) == "admin"
    directory.applied([recorded(WorkspaceMemberSet(at=AT, actor="x", subject=ALICE,
                                                   role="viewer", previous_role="admin"),
                                kind="workspace")])
    assert directory.role("acme", ALICE) == "viewer"
    directory.applied([recorded(WorkspaceMemberRemoved(at=AT, actor="x", subject=ALICE,
                                                       previous_role="viewer"),
                                kind="workspace")])
    assert directory.role("acme", ALICE) is None
    assert reads.calls == 1


def test_reset_forgets_and_unknown_ids_are_not_remembered() -> None:
    reads = Reads()
    directory = AccessDirectory(reads, live=lambda: True)
    for _ in range(3):
        assert directory.credential(uuid.uuid4().hex[:16]) is None
    assert reads.calls == 3
    reads.credentials["a"] = view_row("a")
    directory.credential("a")
    directory.reset()
    reads.credentials["a"] = view_row("a", revoked=True)
    assert directory.credential("a") == view_row("a", revoked=True)


def test_without_a_local_runner_every_lookup_reads_the_views() -> None:
    reads = Reads()
    reads.credentials["a"] = view_row("a")
    live = [False]
    directory = AccessDirectory(reads, live=lambda: live[0])
    for _ in range(3):
        directory.credential("a")
        directory.role("acme", ALICE)
    assert reads.calls == 6
