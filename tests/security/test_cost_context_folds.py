"""A context's state folded from the log costs what its events weigh, not their square.

``evolve`` copies a context's grants (and sorts them), its declared consumers and its revisions
into a new tuple at every event. Folding a stream from the log therefore cost the square of its
length: a context with 20,000 grants took 21 s of CPU (5,000: 1.4 s), 20,000 consumers 8 s and
20,000 revisions 0.7 s, and such folds run per request: ``GET ...?asOf=`` of a context or of the
namespace's list (any reader), and the namespace at a position that every pack resolves (any
agent, at any ``asOf.systemTime`` it likes; a grant or a revision makes the cached folds stale).
The folds now keep the three in builders and are checked against ``evolve`` event by event."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from context_service.adapters.eventstore.application import ContextApplication
from context_service.domain.context.events import (
    AccessGranted,
    AccessRevoked,
    ClaimObserved,
    Consumer,
    ConsumerAttached,
    ConsumerDetached,
    ContextCreated,
    ContextDeleted,
    Grant,
    QueryIndexPublished,
    Revision,
    RevisionPublished,
    Storage,
)
from context_service.domain.context.state import ContextState, evolve
from context_service.domain.events import Event, Subject
from context_service.domain.stream import Recorded, context_stream
from context_service.projections.context_catalog.projection import ContextCatalog
from context_service.projections.pack_inputs.fold import fold
from context_service.projections.pack_inputs.view import PackInput
from tests.support.cpu_cost import least_cpu

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ALICE = Subject("user", "alice")


def created() -> ContextCreated:
    return ContextCreated(at=NOW, actor="user:alice", namespace="team", name="facts",
                          type="knowledge", storage=Storage("pvc", "1Gi", "ReadWriteOnce"),
                          owner=ALICE)


def granted(name: str, permissions: tuple[str, ...] = ("read",)) -> AccessGranted:
    return AccessGranted(at=NOW, actor="user:alice",
                         grant=Grant(Subject("user", name), permissions, NOW))


def revision(n: int, appended: bool = True) -> RevisionPublished:
    return RevisionPublished(at=NOW, actor="user:alice", appended=appended, revision=Revision(
        id=f"{n:064x}", created_at=NOW, operation="sync"))


def inputs(events: list[Event]) -> list[PackInput]:
    return [PackInput(namespace="team", position=i + 1, recorded_at=NOW + timedelta(seconds=i),
                      kind="context", key="facts", event=e) for i, e in enumerate(events)]



def test_a_namespace_with_four_times_the_grants_folds_in_about_four_times_the_time() -> None:
    def cost(n: int) -> float:
        events: list[Event] = [created()]
        events += [granted(f"u{i}") for i in range(n)]
        events += [revision(i) for i in range(n)]
        given = inputs(events)
        at = fold("team", len(given), given)
        assert at.collections["facts"].current_revision == f"{n - 1:064x}"
        return least_cpu(lambda: fold("team", len(given), given))

    small, large = cost(2_500), cost(10_000)
    # linear: about 4; a copy of every grant and revision at every event made it about 16
    assert large / small < 8, f"four times the events cost {large / small:.1f} times as much"


def a_stream(grants: int) -> list[Recorded]:
    """A context's log: its creation, then ``grants`` grants and as many revisions."""
    events: list[Event] = [created(), *(granted(f"u{i}") for i in range(grants)),
                           *(revision(i) for i in range(grants))]
    stream = context_stream("team", "facts")
    return [Recorded(position=i + 1, stream=stream, version=i + 1, name=type(e).__name__,
                     event=e) for i, e in enumerate(events)]


class Log:
    """The store's reads, of one stream, from memory."""

    def __init__(self, recorded: list[Recorded]) -> None:
        self.recorded = recorded

    def load(self, stream: object, after_version: int = 0) -> list[Recorded]:
        return [r for r in self.recorded if r.version > after_version]


class Catalog:
    """The catalog view, empty, keeping what is saved."""

    def __init__(self) -> None:
        self.saved: list[tuple[object, ContextState, int]] = []

    def load(self, stream_ids: object) -> dict[object, tuple[ContextState, int]]:
        return {}

    def save(self, rows: list[tuple[object, ContextState, int]]) -> None:
        self.saved = rows


def test_the_write_model_reads_a_long_stream_in_about_linear_time() -> None:
    def cost(grants: int) -> float:
        recorded = a_stream(grants)

        def load() -> ContextState:
            app = ContextApplication(Log(recorded))  # type: ignore[arg-type]  # reads only
            return app.load_stream(context_stream("team", "facts"))[1]
        assert len(load().grants) == grants + 1 and len(load().revisions) == grants
        return least_cpu(load)

    small, large = cost(2_500), cost(10_000)
    assert large / small < 8, f"four times the events cost {large / small:.1f} times as much"


def test_the_catalog_applies_a_batch_of_grants_in_about_linear_time() -> None:
    def cost(grants: int) -> float:
        batch = a_stream(grants)

        def apply() -> ContextState:
            view = Catalog()
            ContextCatalog().apply(view, batch)  # type: ignore[arg-type]  # the two calls
            return view.saved[0][1]
        assert len(apply().grants) == grants + 1
        return least_cpu(apply)

    small, large = cost(2_500), cost(10_000)
    assert large / small < 8, f"four times the events cost {large / small:.1f} times as much"


def random_events(rng: random.Random, count: int) -> list[Event]:
    names = [f"u{i}" for i in range(6)]
    pods = [f"p{i}" for i in range(4)]
    events: list[Event] = [created()]
    for n in range(count):
        pick = rng.randrange(10)
        subject = Subject("user", rng.choice(names))
        if pick == 0:
            events.append(granted(subject.name, rng.choice((("read",), ("read", "write")))))
        elif pick == 1:
            events.append(AccessRevoked(at=NOW, actor="user:alice", subject=subject))
        elif pick == 2:
            events.append(ConsumerAttached(at=NOW, actor="user:alice", consumer=Consumer(
                subject, "pod", rng.choice(pods), "ReadWriteOnce", rng.random() < 0.5, True,
                NOW)))
        elif pick == 3:
            events.append(ConsumerDetached(at=NOW, actor="user:alice", subject=subject,
                                           kind="pod", name=rng.choice(pods)))
        elif pick == 4:
            events.append(revision(rng.randrange(5), appended=rng.random() < 0.8))
        elif pick == 5:
            events.append(QueryIndexPublished(at=NOW, actor="user:alice",
                                              revision=f"{n:064x}", records=()))
        elif pick == 6:
            events.append(ClaimObserved(at=NOW, actor="system", phase="Bound",
                                        storage_class="fast"))
        elif pick == 7 and rng.random() < 0.2:
            events.append(ContextDeleted(at=NOW, actor="user:alice", force=False))
        elif pick == 8 and rng.random() < 0.3:
            events.append(created())
        else:
            events.append(granted(subject.name))
    return events


def test_a_fold_is_the_state_evolve_gives_after_every_event() -> None:
    from context_service.domain.context.folding import Folding

    rng = random.Random(20)
    for _ in range(200):
        events = random_events(rng, rng.randrange(1, 40))
        expected = ContextState()
        folding = Folding()
        for event in events:
            expected = evolve(expected, event)
            folding.apply(event)
            if rng.random() < 0.3:  # asked for along the way, as well as at the end
                assert folding.state == expected
            partial = folding.partial
            assert (partial.live, partial.generation, partial.current_revision,
                    partial.index_revision) == (expected.live, expected.generation,
                                                expected.current_revision,
                                                expected.index_revision)
        assert folding.state == expected
        assert Folding(expected).state == expected


def test_a_state_naming_a_subject_twice_folds_as_evolve_does() -> None:
    from context_service.domain.context.folding import Folding

    twice = (granted("a").grant, granted("a", ("read", "write")).grant, granted("b").grant)
    consumer = Consumer(ALICE, "pod", "p", "ReadWriteOnce", True, True, NOW)
    given = ContextState(live=True, generation=1, name="facts", grants=twice,
                         declared=(consumer, consumer))
    events: list[Event] = [granted("c"), AccessRevoked(at=NOW, actor="user:alice",
                                                       subject=Subject("user", "b")),
                           ConsumerDetached(at=NOW, actor="user:alice", subject=ALICE,
                                            kind="pod", name="q"), revision(1), created(),
                           granted("d")]
    expected, folding = given, Folding(given)
    for event in events:
        expected = evolve(expected, event)
        folding.apply(event)
        assert folding.state == expected
