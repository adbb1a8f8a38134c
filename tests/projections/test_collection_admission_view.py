"""The collection_admission view (agent-context-api §3.4 rule 5): after histories that interleave
memberships, context creations and deletions and context-set versions, the contexts agents are
listed equal a direct reading of the log, batch boundaries anywhere; and the view equals its
rebuild from position zero."""

from __future__ import annotations

import contextlib
import random

import pytest

from context_service.adapters.postgres.views.collection_admission import AdmittedContextsSql
from context_service.bootstrap import Container
from context_service.domain.context import commands as c
from context_service.domain.context.events import ContextCreated, ContextDeleted
from context_service.domain.context_set.commands import (
    ArchiveContextSet,
    CreateContextSet,
    Draft,
    ReplaceContextSet,
)
from context_service.domain.context_set.events import ContextSetArchived, ContextSetVersion
from context_service.domain.errors import DomainError
from context_service.domain.events import ADMIN, Subject
from context_service.domain.workspace.commands import RemoveMember, SetMember
from context_service.domain.workspace.events import WorkspaceMemberRemoved, WorkspaceMemberSet
from tests.support.views import snapshot

pytestmark = pytest.mark.postgres
WORKSPACES = ["ns", "other"]
PEOPLE = [Subject("user", n) for n in ("alice", "bob", "carol")]
NAMES = ["alpha", "beta", "gamma", "delta"]
SETS = ["finance", "hr"]


def write(container: Container, rng: random.Random, steps: int) -> None:
    """Random memberships, creations (by members, strangers and the bootstrap administrator),
    deletions and set versions, in one interleaved history; refusals are skipped."""
    for ws in WORKSPACES:  # each workspace keeps an owner, so members can come and go
        container.workspaces.execute(ws, SetMember(actor=ADMIN, subject=Subject("user", "own"),
                                                   role="owner"))
    for _ in range(steps):
        ws, pick = rng.choice(WORKSPACES), rng.randrange(10)
        with contextlib.suppress(DomainError):
            if pick <= 1:
                container.workspaces.execute(ws, SetMember(
                    actor=ADMIN, subject=rng.choice(PEOPLE), role=rng.choice(
                        ["admin", "member", "viewer"])))
            elif pick == 2:
                container.workspaces.execute(ws, RemoveMember(actor=ADMIN,
                                                              subject=rng.choice(PEOPLE)))
            elif pick <= 5:
                name = rng.choice(NAMES)
                container.contexts.execute(ws, name, c.CreateContext(
                    actor=rng.choice([*PEOPLE, ADMIN]), name=name, namespace=ws,
                    type="knowledge", backend="pvc", size="1Gi", access_mode="ReadWriteOnce"))
            elif pick == 6:
                container.contexts.execute(ws, rng.choice(NAMES),
                                           c.DeleteContext(actor=ADMIN, force=True))
            else:
                set_id = rng.choice(SETS)
                draft = Draft(name="Set", description=str(rng.randrange(3)),
                              collections=tuple(rng.sample(NAMES, rng.randrange(0, 3))))
                if pick == 9:
                    container.context_sets.execute(ws, ArchiveContextSet(
                        actor=ADMIN, set_id=set_id))
                elif container.context_sets.load(ws, set_id)[1].exists:
                    container.context_sets.execute(ws, ReplaceContextSet(
                        actor=ADMIN, set_id=set_id, draft=draft))
                else:
                    container.context_sets.execute(ws, CreateContextSet(
                        actor=ADMIN, set_id=set_id, draft=draft))


def expected(container: Container, ws: str) -> list[str]:
    """The rule read straight off the log: a live context created by a member (or the bootstrap
    administrator), or named by an active set's version in force recorded after its creation."""
    members: set[str] = set()
    created: dict[str, tuple[int, bool]] = {}
    sets: dict[str, tuple[int, tuple[str, ...]] | None] = {}
    for r in container.store.read(0, 100_000):
        if r.stream.namespace != ws:
            continue
        e = r.event
        if isinstance(e, WorkspaceMemberSet):
            members.add(e.subject.key)
        elif isinstance(e, WorkspaceMemberRemoved):
            members.discard(e.subject.key)
        elif isinstance(e, ContextCreated):
            created[e.name] = (r.position, e.owner == ADMIN or e.owner.key in members)
        elif isinstance(e, ContextDeleted):
            created.pop(r.stream.key, None)
        elif isinstance(e, ContextSetVersion):
            sets[e.id] = (r.position, e.collections)
        elif isinstance(e, ContextSetArchived):
            sets[e.id] = None
    return sorted(name for name, (at, by_member) in created.items() if by_member or any(
        s is not None and s[0] > at and name in s[1] for s in sets.values()))


def listed(container: Container, ws: str) -> list[str]:
    return sorted(s.name for s in AdmittedContextsSql(container.datastore).list(ws, None))


@pytest.mark.parametrize("seed", [3, 11])
def test_listing_follows_the_log_and_equals_its_rebuild(idle_container: Container,
                                                        seed: int) -> None:
    container = idle_container
    rng = random.Random(seed)
    runner = container.runner("collection_admission")
    for _ in range(4):  # several batches, each ending at an arbitrary point of the history
        write(container, rng, 60)
        runner.catch_up()
        for ws in WORKSPACES:
            assert listed(container, ws) == expected(container, ws)
    assert any(listed(container, ws) for ws in WORKSPACES)
    left_out = [n for ws in WORKSPACES for n in NAMES
                if container.contexts.load(ws, n)[1].live and n not in listed(container, ws)]
    assert left_out, "the history should leave a collection no member created"
    live = snapshot(container)
    assert live["collection_origins"] and live["collection_admission_members"]
    runner.rebuild()
    assert snapshot(container) == live
    for ws in WORKSPACES:
        assert listed(container, ws) == expected(container, ws)


def test_one_batch_judges_each_creation_at_its_own_place(idle_container: Container) -> None:
    """Joined and left within one batch: the creation between counts as a member's, the one
    after does not."""
    container = idle_container
    bob = Subject("user", "bob")
    container.workspaces.execute("ns", SetMember(actor=ADMIN, subject=Subject("user", "own"),
                                                 role="owner"))
    container.workspaces.execute("ns", SetMember(actor=ADMIN, subject=bob, role="viewer"))
    for name in ("alpha", "beta"):
        if name == "beta":
            container.workspaces.execute("ns", RemoveMember(actor=ADMIN, subject=bob))
        container.contexts.execute("ns", name, c.CreateContext(
            actor=bob, name=name, namespace="ns", type="memory", backend="pvc", size="1Gi",
            access_mode="ReadWriteOnce"))
    container.runner("collection_admission").catch_up()
    assert listed(container, "ns") == ["alpha"] == expected(container, "ns")
