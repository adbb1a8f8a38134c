"""``Folding`` gives what ``evolve`` gives, for any stream and from any state it starts at.

The streams mix every event of a context, with the shapes the builders must follow: adoption
(grants unsorted, a subject or a consumer named twice, subjects whose keys are equal),
deletion and re-creation, revisions re-published (``appended`` false), grants re-granted with
other roles, consumers re-attached with other attributes, and a fold resumed from a state
already folded (the write model's cache), compared after every event.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from context_service.domain.context.events import (
    AccessGranted,
    AccessRevoked,
    ClaimObserved,
    Consumer,
    ConsumerAttached,
    ConsumerDetached,
    ContextAdopted,
    ContextCreated,
    ContextDeleted,
    Grant,
    PodConsumersObserved,
    QueryIndexPublished,
    RetentionPolicySet,
    Revision,
    RevisionPublished,
    SnapshotRecorded,
    Storage,
)
from context_service.domain.context.folding import Folding
from context_service.domain.context.state import ContextState, evolve
from context_service.domain.events import Event, Subject

T0 = datetime(2026, 1, 1, tzinfo=UTC)
ACTOR = "user:alice"
# "user:a:b" both: two subjects whose keys collide, and plain ones
SUBJECTS = (Subject("user", "a:b"), Subject("user:a", "b"), Subject("user", "alice"),
            Subject("agent", "bot"), Subject("workload", "job"), Subject("user", "zed"))
ROLES = (("read",), ("read", "write"), ("administer",), ("attach", "derive"))
STORAGE = Storage("pvc", "1Gi", "ReadWriteOnce")


def _grant(rng: random.Random, at: datetime) -> Grant:
    return Grant(rng.choice(SUBJECTS), rng.choice(ROLES), at)


def _consumer(rng: random.Random, at: datetime) -> Consumer:
    return Consumer(rng.choice(SUBJECTS[:3]), rng.choice(("pod", "job")),
                    rng.choice(("p0", "p1", "p2")), rng.choice(("ReadWriteOnce", "ReadOnlyMany")),
                    rng.random() < 0.5, rng.random() < 0.5, at)


def _revision(rng: random.Random, at: datetime) -> Revision:
    return Revision(id=f"{rng.randrange(4):064x}", created_at=at,
                    operation=rng.choice(("sync", "import")))


def _adopted(rng: random.Random, at: datetime) -> ContextAdopted:
    grants = tuple(_grant(rng, at) for _ in range(rng.randrange(5)))
    if rng.random() < 0.5:  # the importer's order, as often as not
        grants = tuple(sorted(grants, key=lambda g: g.subject.key))
    revisions = tuple(_revision(rng, at) for _ in range(rng.randrange(3)))
    return ContextAdopted(at=at, actor=ACTOR, namespace="team", name="facts", type="knowledge",
                          storage=STORAGE, phase=rng.choice(("Bound", "Pending")), grants=grants,
                          consumers=tuple(_consumer(rng, at) for _ in range(rng.randrange(4))),
                          revisions=revisions,
                          current_revision=revisions[-1].id if revisions else "")


def _event(rng: random.Random, n: int) -> Event:
    at = T0 + timedelta(seconds=n)
    pick = rng.randrange(16)
    subject = rng.choice(SUBJECTS)
    if pick < 3:
        return AccessGranted(at=at, actor=ACTOR, grant=_grant(rng, at))
    if pick == 3:
        return AccessRevoked(at=at, actor=ACTOR, subject=subject)
    if pick < 6:
        return ConsumerAttached(at=at, actor=ACTOR, consumer=_consumer(rng, at))
    if pick == 6:
        c = _consumer(rng, at)
        return ConsumerDetached(at=at, actor=ACTOR, subject=c.subject, kind=c.kind, name=c.name)
    if pick < 9:
        return RevisionPublished(at=at, actor=ACTOR, appended=rng.random() < 0.6,
                                 revision=_revision(rng, at))
    if pick == 9:
        return QueryIndexPublished(at=at, actor=ACTOR, revision=f"{n:064x}", records=())
    if pick == 10:
        return PodConsumersObserved(at=at, actor="system", consumers=tuple(
            _consumer(rng, at) for _ in range(rng.randrange(3))))
    if pick == 11:
        return rng.choice((
            ClaimObserved(at=at, actor="system", phase="Bound", storage_class="fast"),
            RetentionPolicySet(at=at, actor=ACTOR, keep_last=rng.randrange(3)),
            SnapshotRecorded(at=at, actor=ACTOR, name=f"s{n}", object_name=f"o{n}",
                             type="knowledge", size="1Gi", access_mode="ReadWriteOnce",
                             storage_class="fast", snapshot_class="csi")))
    if pick == 12:
        return ContextDeleted(at=at, actor=ACTOR, force=False)
    if pick == 13:
        return _adopted(rng, at)
    return ContextCreated(at=at, actor=ACTOR, namespace="team", name="facts", type="knowledge",
                          storage=STORAGE, owner=subject,
                          revision=_revision(rng, at) if rng.random() < 0.5 else None)


def _others(state: ContextState) -> ContextState:
    """The fields ``partial`` promises: all but the three the builders keep."""
    return msgspec.structs.replace(state, grants=(), declared=(), revisions=())


@pytest.mark.parametrize("seed", range(20))
def test_every_state_along_a_stream_is_the_one_evolve_gives(seed: int) -> None:
    rng = random.Random(seed)
    expected, folding = ContextState(), Folding()
    for n in range(300):
        event = _event(rng, n)
        expected = evolve(expected, event)
        folding.apply(event)
        assert folding.state == expected, (n, event)
        assert _others(folding.partial) == _others(expected), (n, event)
        if rng.random() < 0.1:  # a fold resumed from a state already folded
            folding = Folding(expected)
            assert folding.state == expected


def test_grants_re_granted_with_other_roles_keep_evolves_order_when_keys_are_equal() -> None:
    a, b = SUBJECTS[0], SUBJECTS[1]  # both "user:a:b"
    events: list[Event] = [
        ContextCreated(at=T0, actor=ACTOR, namespace="team", name="facts", type="knowledge",
                       storage=STORAGE, owner=SUBJECTS[2]),
        AccessGranted(at=T0, actor=ACTOR, grant=Grant(a, ("read",), T0)),
        AccessGranted(at=T0, actor=ACTOR, grant=Grant(b, ("read",), T0)),
        AccessGranted(at=T0, actor=ACTOR, grant=Grant(a, ("read", "write"), T0)),
        AccessRevoked(at=T0, actor=ACTOR, subject=b),
        AccessGranted(at=T0, actor=ACTOR, grant=Grant(b, ("administer",), T0)),
    ]
    expected, folding = ContextState(), Folding()
    for event in events:
        expected = evolve(expected, event)
        folding.apply(event)
        assert folding.state == expected
