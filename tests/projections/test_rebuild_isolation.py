"""A rebuild (``projections rebuild``, or the recovery of views that passed over events at start)
is atomic for every other reader: another connection, say an API pod reading the same tables,
sees the old complete views until the rebuild commits, then the new complete ones, never empty
or half-built ones, and is never blocked while the rebuild runs. A rebuild failing on a poison
event leaves the old views, their tracking positions and their notes as they were."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from context_service.adapters.eventstore import mapper
from context_service.adapters.eventstore.runner import (
    PassedOver,
    PoisonEventError,
    ProjectionRunner,
)
from context_service.bootstrap import Container
from context_service.domain.events import Event
from context_service.domain.registry import EVENTS
from context_service.domain.stream import Recorded
from tests.support.newer_events import NEWER, create, record_newer

pytestmark = pytest.mark.postgres
WAIT = 30.0  # seconds a step of the test may take at most on a loaded machine


class Generations:
    """A test projection whose view is the table of the positions it applied, each row with the
    generation that wrote it (the rows before a rebuild and after it differ); it can pause a
    replay between batches (``pause_at``: the call that waits for ``resume``) and raises at
    ``poison``."""

    def __init__(self, container: Container) -> None:
        self.name = "test-generations-" + uuid.uuid4().hex[:8]
        self.tables = ("t_" + self.name.replace("-", "_"),)
        self.generation, self.poison, self.pause_at, self.calls = 1, 0, 0, 0
        self.paused, self.resume = threading.Event(), threading.Event()
        with container.datastore.transaction(commit=True) as cur:
            cur.execute(f"CREATE TABLE {self.tables[0]} (position int8 PRIMARY KEY,"
                        " generation int NOT NULL)")

    def apply(self, cur: Any, batch: Sequence[Recorded]) -> None:
        self.calls += 1
        if self.calls == self.pause_at:  # a batch of the replay is committed-to-be, not yet all
            self.paused.set()
            assert self.resume.wait(WAIT)
        for recorded in batch:
            if recorded.position == self.poison:
                raise ValueError(f"cannot apply {recorded.name}")
            cur.execute(f"INSERT INTO {self.tables[0]} VALUES (%s, %s)",
                        (recorded.position, self.generation))

    def rows(self, container: Container) -> list[tuple[int, int]]:
        """The view as another connection sees it, which gives up at once on any lock."""
        with container.datastore.transaction(commit=False) as cur:
            cur.execute("SET LOCAL lock_timeout = '200ms'")
            cur.execute("SET LOCAL statement_timeout = '5s'")
            cur.execute(f"SELECT position, generation FROM {self.tables[0]} ORDER BY position")
            return [(row["position"], row["generation"]) for row in cur.fetchall()]


class Told:
    """An in-memory read model fed by the runner: what it was told, in order."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def applied(self, batch: Sequence[Recorded]) -> None:
        self.calls.append("applied")

    def reset(self) -> None:
        self.calls.append("reset")


class Renamed(Event, frozen=True, kw_only=True, tag=NEWER):
    """The newer version's event, as a version that knows it decodes it."""

    new_name: str
    reason: str


@pytest.fixture(autouse=True)
def own_decoders(monkeypatch: pytest.MonkeyPatch) -> None:
    """The newer event's class is this module's: the mapper's decoders, cached by name, must not
    keep it for the modules that run after (nor bring another one in)."""
    monkeypatch.setattr(mapper, "_decoders", {
        name: decoder for name, decoder in mapper._decoders.items() if name != NEWER})


def logged(container: Container) -> list[int]:
    return [r.position for r in container.store.read(0, 100_000)]


def catalog_rows(container: Container) -> set[uuid.UUID]:
    """The context catalog as another connection (an API pod) sees it, never waiting on a lock."""
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SET LOCAL lock_timeout = '200ms'")
        cur.execute("SET LOCAL statement_timeout = '5s'")
        cur.execute("SELECT stream_id FROM context_catalog")
        return {row["stream_id"] for row in cur.fetchall()}


def tracked(container: Container, *names: str) -> dict[str, int | None]:
    return {name: container.tracking.max_tracking_id(name) for name in names}


def with_catalog(container: Container, projection: Generations,
                 listeners: Sequence[Told] = ()) -> ProjectionRunner:
    """A runner of the real context catalog and the test projection, one event per batch."""
    [catalog] = [(p, v) for p, v in container.runner("context_catalog").projections
                 if p.name == "context_catalog"]
    return ProjectionRunner(container.store, container.tracking,
                            [catalog, (projection, lambda cur: cur)], batch_size=1,
                            listeners=listeners)


@pytest.fixture
def in_background() -> Iterator[Callable[[Callable[[], object]], threading.Thread]]:
    threads: list[threading.Thread] = []

    def start(work: Callable[[], object]) -> threading.Thread:
        thread = threading.Thread(target=work, daemon=True)
        threads.append(thread)
        thread.start()
        return thread

    yield start
    for thread in threads:
        thread.join(WAIT)


def test_other_readers_see_the_old_views_until_the_rebuild_commits(
        idle_container: Container,
        in_background: Callable[[Callable[[], object]], threading.Thread]) -> None:
    for name in ("a", "b", "c", "d"):
        create(idle_container, name)
    projection = Generations(idle_container)
    runner = with_catalog(idle_container, projection)
    runner.catch_up()
    head = idle_container.store.head()
    before, contexts = projection.rows(idle_container), catalog_rows(idle_container)
    assert [p for p, _ in before] == logged(idle_container) and len(contexts) >= 4

    told = Told()
    runner = with_catalog(idle_container, projection, [told])  # a fresh process's runner
    told.calls.clear()
    projection.generation, projection.calls, projection.pause_at = 2, 0, 3
    progress: list[int] = []
    done = in_background(lambda: runner.rebuild(lambda position, _: progress.append(position)))
    assert projection.paused.wait(WAIT)  # two batches replayed, the third under way
    try:
        assert progress, "the replay reports its progress as it goes"
        # another connection: the old complete views, not empty, not half-built, not blocked
        assert projection.rows(idle_container) == before
        assert catalog_rows(idle_container) == contexts
        assert tracked(idle_container, projection.name, "context_catalog") == {
            projection.name: head, "context_catalog": head}
        # this process: the old views are complete at the positions it knew; nothing told yet
        assert runner.wait_for(head, 0)
        assert told.calls == []
    finally:
        projection.resume.set()
    done.join(WAIT)
    assert projection.rows(idle_container) == [(p, 2) for p in logged(idle_container)]
    assert catalog_rows(idle_container) == contexts
    assert tracked(idle_container, projection.name, "context_catalog") == {
        projection.name: head, "context_catalog": head}
    assert runner.position == head and progress[-1] == head
    assert told.calls == ["reset"]  # the new views, once committed


def test_a_rebuild_failing_on_a_poison_event_leaves_the_old_views_and_positions(
        idle_container: Container) -> None:
    create(idle_container, "a")
    poison = create(idle_container, "b")
    create(idle_container, "c")
    projection = Generations(idle_container)
    with_catalog(idle_container, projection).catch_up()
    head = idle_container.store.head()
    before, contexts = projection.rows(idle_container), catalog_rows(idle_container)

    projection.generation, projection.poison = 2, poison  # a newer handler fails on it
    runner = with_catalog(idle_container, projection)
    with pytest.raises(PoisonEventError, match=f"{projection.name} held at {poison}"):
        runner.rebuild()
    assert projection.rows(idle_container) == before
    assert catalog_rows(idle_container) == contexts
    assert tracked(idle_container, projection.name, "context_catalog") == {
        projection.name: head, "context_catalog": head}
    assert runner.position == head  # the process still knows the old views as complete


def upgraded_runner(container: Container, monkeypatch: pytest.MonkeyPatch,
                    projection: Generations) -> tuple[int, int]:
    """The older version passes over an event of a type the newer one knows; then this process
    knows it. Returns the position of that event and the log head."""
    create(container, "a")
    newer = record_newer(container, "a", version=2)
    for name in ("b", "c", "d"):
        create(container, name)
    ProjectionRunner(container.store, container.tracking,
                     [(projection, lambda cur: cur)]).catch_up()
    monkeypatch.setitem(EVENTS, NEWER, Renamed)
    return newer, container.store.head()


def test_a_recovery_at_start_shows_other_readers_the_old_view_until_it_commits(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch,
        in_background: Callable[[Callable[[], object]], threading.Thread]) -> None:
    projection = Generations(idle_container)
    newer, head = upgraded_runner(idle_container, monkeypatch, projection)
    before = projection.rows(idle_container)
    assert newer not in [p for p, _ in before]

    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)], batch_size=1)
    projection.generation, projection.calls, projection.pause_at = 2, 0, 3
    done = in_background(runner.catch_up)  # the newer version's worker starting
    assert projection.paused.wait(WAIT)
    try:
        assert projection.rows(idle_container) == before
        assert tracked(idle_container, projection.name) == {projection.name: head}
    finally:
        projection.resume.set()
    done.join(WAIT)
    assert projection.rows(idle_container) == [(p, 2) for p in logged(idle_container)]
    assert tracked(idle_container, projection.name) == {projection.name: head}
    assert runner.position == head and runner.passed_over() == []


def test_a_recovery_failing_on_a_poison_event_leaves_the_old_view_to_retry(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    projection = Generations(idle_container)
    newer, head = upgraded_runner(idle_container, monkeypatch, projection)
    before = projection.rows(idle_container)
    projection.generation, projection.poison = 2, newer  # the newer handler fails on it

    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)])
    runner.catch_up()  # a worker still starts
    assert projection.rows(idle_container) == before
    assert tracked(idle_container, projection.name) == {projection.name: head}
    assert runner.blocked == {projection.name: newer}
    # the notes stay: the next start (or reading of the positions) tries the recovery again
    assert runner.passed_over() == [PassedOver(projection.name, NEWER, newer, newer, 1)]
    projection.poison = 0  # a fixed handler
    runner.catch_up()
    assert projection.rows(idle_container) == [(p, 2) for p in logged(idle_container)]
    assert runner.blocked == {} and runner.passed_over() == []


@pytest.mark.postgres
def test_a_recovery_another_instance_finished_no_longer_shows_the_view_blocked(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """A runner whose recovery failed on an event shows the view blocked there
    (``cs_projection_blocked``). Another instance (a fixed release that took the worker lock)
    then recovers the view: its notes are gone, and once this runner reads its positions again
    nothing is left to recover, so nothing is blocked. The failed recovery stayed in ``blocked``
    for as long as the process lived: an alert no one could clear but by a restart."""
    monkeypatch.setattr(mapper, "_decoders", {  # the newer event's class is this test's
        name: decoder for name, decoder in mapper._decoders.items() if name != NEWER})
    projection = Generations(idle_container)
    newer, _ = upgraded_runner(idle_container, monkeypatch, projection)
    projection.generation, projection.poison = 2, newer  # this release's handler fails on it
    here = ProjectionRunner(idle_container.store, idle_container.tracking,
                            [(projection, lambda cur: cur)])
    here.catch_up()
    assert here.blocked == {projection.name: newer}

    projection.poison = 0  # the other instance's handler does not fail
    elsewhere = ProjectionRunner(idle_container.store, idle_container.tracking,
                                 [(projection, lambda cur: cur)])
    elsewhere.catch_up()
    assert elsewhere.blocked == {} and elsewhere.passed_over() == []

    here.catch_up()  # reads its positions (and the notes) again
    assert here.passed_over() == []
    assert here.blocked == {}


class Impatient(Generations):
    """The test projection, whose batches give up on a lock at once (as every session of the
    service does after ``database.LOCK_TIMEOUT_SECONDS``)."""

    def apply(self, cur: Any, batch: Sequence[Recorded]) -> None:
        cur.execute("SET LOCAL lock_timeout = '50ms'")
        super().apply(cur, batch)


@pytest.mark.postgres
def test_a_batch_that_waits_past_the_lock_timeout_is_retried_not_held(
        idle_container: Container) -> None:
    """Another session holds the view's table (a rebuild in another process, a stuck script):
    the batch gives up on the lock. That is no event's fault: the view is not held as at a
    poison event (no ``cs_projection_blocked``), and once the lock is gone the batch applies."""
    create(idle_container, "locked")
    projection = Impatient(idle_container)
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)])
    with idle_container.datastore.transaction(commit=False) as other:
        other.execute(f"LOCK TABLE {projection.tables[0]} IN EXCLUSIVE MODE")
        with pytest.raises(Exception, match="lock timeout"):
            runner.catch_up()
        assert runner.blocked == {}
    runner.catch_up()
    assert [p for p, _ in projection.rows(idle_container)] == logged(idle_container)
