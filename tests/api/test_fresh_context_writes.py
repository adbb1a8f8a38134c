"""The context writes that check the caller's permission before they read the body (spec 1.8,
1.9, 1.7, 1.11): a caller whose grant another replica of the service revoked hears 404 even
when the body is malformed, as the order of checks says, not the 400 this process's cache
would let through. A clone checks ``derive`` on its source again when it commits.

One service for the module: each test's context lives in a namespace of its own."""

from __future__ import annotations

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.application import ContextApplication
from context_service.domain.context.commands import (
    CreateClone,
    GrantAccess,
    ObserveSnapshot,
    RecordSnapshot,
    RevokeAccess,
)
from context_service.domain.context.lifecycle import clone_source
from context_service.domain.errors import ContextNotFoundError
from context_service.domain.events import Subject
from tests.api.conftest import Api, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import grant

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
ALICE = Subject("user", "alice")
BOB = Subject("user", "bob")
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}
MALFORMED = {"unknown": True}  # refused by body decoding: a key the request shape does not list

# method, path under the context, the permission the route checks first
WRITES = [
    ("PUT", "/grants", "administer"),
    ("DELETE", "/grants", "administer"),
    ("PUT", "/consumers", "attach"),
    ("DELETE", "/consumers", "attach"),
    ("PUT", "/retention", "administer"),
    ("PUT", "/query-index", "write"),
]


@pytest.fixture
def ctx(api: Api) -> Namespaced:
    """``research-memory`` (a memory context) in a namespace of the test's own, owned by
    ``user:alice``."""
    alice = namespaced(api).as_("user:alice")
    created = alice.post("/v1/contexts", alice.context_body())
    assert created.status_code == 201, created.text
    return alice


def revoked_elsewhere(container: bootstrap.Container, ctx: Namespaced) -> None:
    """Bob's grant revoked through another write model over the same log: this process's cache
    never sees it."""
    ContextApplication(container.store).execute(
        ctx.ns, "research-memory", RevokeAccess(actor=ALICE, subject=BOB))


@pytest.mark.parametrize(("method", "path", "permission"), WRITES)
def test_a_caller_revoked_by_another_replica_hears_404_before_its_body_is_read(
        ctx: Namespaced, container: bootstrap.Container, method: str, path: str,
        permission: str) -> None:
    bob = ctx.as_("user:bob")
    grant(ctx, "user:bob", "read", permission, path=ctx.context)
    before = bob.request(method, ctx.context + path, MALFORMED)
    assert before.status_code == 400, before.text  # still granted: the body is what is wrong
    revoked_elsewhere(container, ctx)
    expect(bob.request(method, ctx.context + path, MALFORMED), 404, NOT_FOUND)


def test_a_grant_revoked_elsewhere_leaves_a_well_formed_grant_unwritten(
        ctx: Namespaced, container: bootstrap.Container) -> None:
    """The hot grant path checks on the cache first; the command's decision on the log still
    refuses, and nothing is written."""
    bob = ctx.as_("user:bob")
    grant(ctx, "user:bob", "read", "administer", path=ctx.context)
    revoked_elsewhere(container, ctx)
    body = {"subject": {"kind": "user", "name": "carol"}, "permissions": ["read"]}
    expect(bob.put(ctx.context + "/grants", body), 404, NOT_FOUND)
    granted = [g["subject"]["name"] for g in ctx.get(ctx.context + "/grants").json()["items"]]
    assert "carol" not in granted


def test_a_derive_grant_revoked_before_the_clone_commits_refuses_the_clone(
        ctx: Namespaced, container: bootstrap.Container) -> None:
    """The clone route checked bob's ``derive`` and read the ready snapshot at the start of
    the request; the grant is revoked elsewhere before the command is decided: no clone."""
    owner = ContextApplication(container.store)
    owner.execute(ctx.ns, "research-memory", RecordSnapshot(
        actor=ALICE, name="nightly", storage_class="standard", snapshot_class="csi"))
    owner.execute(ctx.ns, "research-memory",
                  ObserveSnapshot(actor=ALICE, name="nightly", status="ready"))
    owner.execute(ctx.ns, "research-memory",
                  GrantAccess(actor=ALICE, subject=BOB, permissions=("read", "derive")))
    _, source = container.contexts.load(ctx.ns, "research-memory")
    command = CreateClone(actor=BOB, name="copy", namespace=ctx.ns, source="research-memory",
                          snapshot=clone_source(source, "nightly"))  # as the route reads it
    revoked_elsewhere(container, ctx)
    with pytest.raises(ContextNotFoundError):
        container.contexts.execute(ctx.ns, "copy", command)
    assert not container.contexts.load(ctx.ns, "copy")[1].live
