"""Edges of workspace membership and agent-credential management (agent-context-api.md §1.7,
§3.3, §4.2, §4.3): a membership changed by another replica of the service is seen by the next
request of this one, and the member path of a namespace named ``members`` is read right.

One service for the module: each test's workspace is a namespace of its own."""

from __future__ import annotations

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.access import WorkspaceApplication
from context_service.domain.events import Subject
from context_service.domain.workspace.commands import RemoveMember, SetMember
from tests.api.agent.workspace_namespaced import create
from tests.api.agent.workspace_namespaced import owner as owner  # the fixture
from tests.api.conftest import expect
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import credentials
from tests.support.api_helpers import ADMIN, add_member

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
ALICE = Subject("user", "alice")
ADAM = Subject("user", "adam")
NOT_FOUND = {"code": "NOT_FOUND", "message": "workspace not found"}
FORBIDDEN = {"code": "FORBIDDEN", "message": 'permission "agent_credential:manage" is required'}


def other_replica(container: bootstrap.Container) -> WorkspaceApplication:
    """The membership write model of a second API replica over the same log: what it records
    never passes through this process's application."""
    return WorkspaceApplication(container.store)


def test_a_manager_demoted_or_removed_elsewhere_manages_no_credentials_here(
        owner: Namespaced, container: bootstrap.Container) -> None:
    path = credentials(owner)
    adam = owner.as_("user:adam")
    mine = create(owner, "user:adam")
    assert mine.status_code == 201, mine.text  # this process has seen adam as an admin
    one = f"{path}/{mine.json()['id']}"
    replica = other_replica(container)
    replica.execute(owner.ns, SetMember(actor=ALICE, subject=ADAM, role="viewer"))
    expect(create(owner, "user:adam"), 403, FORBIDDEN)
    expect(adam.get(path), 403, FORBIDDEN)
    expect(adam.get(one), 403, FORBIDDEN)
    expect(adam.delete(one), 403, FORBIDDEN)
    replica.execute(owner.ns, RemoveMember(actor=ALICE, subject=ADAM))
    head = container.store.head()
    for resp in (create(owner, "user:adam"), adam.get(path), adam.get(one), adam.delete(one)):
        expect(resp, 404, NOT_FOUND)
    assert container.store.head() == head  # nothing was recorded
    assert owner.as_("user:alice").get(one).json()["status"] == "active"


def test_a_member_removed_elsewhere_no_longer_lists_the_members_here(
        owner: Namespaced, container: bootstrap.Container) -> None:
    members = f"/v1/namespaces/{owner.ns}/members"
    assert owner.as_("user:vic").get(members).status_code == 200
    other_replica(container).execute(
        owner.ns, RemoveMember(actor=ALICE, subject=Subject("user", "vic")))
    expect(owner.as_("user:vic").get(members), 404,
           {"error": "not_found", "message": "workspace not found"})


def test_members_of_a_namespace_named_members_are_removed(owner: Namespaced) -> None:
    """The member segment is the one after ``/members/`` that follows the namespace, not the
    first ``/members/`` of the path."""
    for namespace in ("members", "v1"):
        path = f"/v1/namespaces/{namespace}/members"
        add_member(owner, "user:alice", "owner", ws=namespace)
        add_member(owner, "user:bob", "viewer", caller="user:alice", ws=namespace)
        gone = owner.as_("user:alice").delete(f"{path}/user:bob")
        assert gone.status_code == 204, gone.text
        expect(owner.as_("user:alice").delete(f"{path}/user:bob"), 404,
               {"error": "not_found", "message": "workspace member not found"})
        expect(owner.as_("user:alice").delete(f"{path}/user:bob/x"), 404,
               {"error": "not_found", "message": "route not found"})
        listed = owner.as_(ADMIN).get(path).json()["items"]
        assert [m["subject"]["name"] for m in listed] == ["alice"]


def test_any_credential_id_in_the_path_is_answered_not_found(owner: Namespaced) -> None:
    """Ids are 16 lowercase hex characters; any other segment, a NUL included, names no
    credential (and never reaches the database as text it cannot hold)."""
    path = credentials(owner)
    missing = {"code": "NOT_FOUND", "message": "agent credential not found"}
    real = create(owner).json()["id"]
    for segment in ("%00", "a%00b", real.upper(), real + "0", "%C3%A9", "x" * 2000):
        expect(owner.as_("user:alice").get(f"{path}/{segment}"), 404, missing)
        expect(owner.as_("user:alice").delete(f"{path}/{segment}"), 404, missing)
    assert owner.as_("user:alice").get(f"{path}/{real}").json()["status"] == "active"
