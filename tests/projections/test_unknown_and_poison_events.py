"""The projection runner and events it cannot handle: an event of a type this version does not
know (a newer version's, during a rolling upgrade) is passed over, a "poison" event (one a handler
raises on) holds back only its own projection and only from itself on, and a stop that timed out
leaves the batch still running unable to commit."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from typing import Any

import msgspec
import pytest

from context_service.adapters.eventstore.mapper import UnknownEventTypeError, from_stored
from context_service.adapters.eventstore.runner import PoisonEventError, ProjectionRunner
from context_service.bootstrap import Container
from context_service.domain.events import UnknownEvent
from context_service.domain.stream import Recorded, StreamRef
from tests.support.newer_events import NEWER, NEWER_FIELDS, create, record_newer

pytestmark = pytest.mark.postgres


def gauge(runner: ProjectionRunner, metric: str, projection: str) -> float:
    [value] = [v for name, _, labels, v in runner.gauges()
               if name == metric and labels == {"projection": projection}]
    return value


class Positions:
    """A test projection whose view is the table of the positions it applied, each at most once;
    its handler raises at ``poison`` until ``cured`` and, with ``hold``, waits for ``release``
    first (a long batch)."""

    def __init__(self, container: Container, poison: int = 0, hold: bool = False) -> None:
        self.name = "test-positions-" + uuid.uuid4().hex[:8]
        self.tables = ("t_" + self.name.replace("-", "_"),)
        self.poison, self.hold = poison, hold
        self.cured, self.entered, self.release = (threading.Event(), threading.Event(),
                                                  threading.Event())
        self.seen: list[Recorded] = []
        with container.datastore.transaction(commit=True) as cur:
            cur.execute(f"CREATE TABLE {self.tables[0]} (position int8 PRIMARY KEY)")

    def apply(self, cur: Any, batch: Sequence[Recorded]) -> None:
        self.entered.set()
        if self.hold:
            self.release.wait(30)
        for recorded in batch:
            self.seen.append(recorded)
            if recorded.position == self.poison and not self.cured.is_set():
                raise ValueError(f"cannot apply {recorded.name}")
            cur.execute(f"INSERT INTO {self.tables[0]} VALUES (%s)", (recorded.position,))

    def applied(self, container: Container) -> list[int]:
        with container.datastore.transaction(commit=False) as cur:
            cur.execute(f"SELECT position FROM {self.tables[0]} ORDER BY position")
            return [row["position"] for row in cur.fetchall()]


class Listened:
    """An in-memory read model fed by the runner: the positions it was told about."""

    def __init__(self) -> None:
        self.positions: list[int] = []

    def applied(self, batch: Sequence[Recorded]) -> None:
        self.positions += [r.position for r in batch]

    def reset(self) -> None:
        self.positions = []


def logged_positions(container: Container) -> list[int]:
    return [r.position for r in container.store.read(0, 100_000)]


def catalog_streams(container: Container) -> set[uuid.UUID]:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT stream_id FROM context_catalog")
        return {row["stream_id"] for row in cur.fetchall()}


# -- an event of an unknown type ---------------------------------------------------------------


def test_the_views_pass_over_an_event_of_an_unknown_type(idle_container: Container) -> None:
    create(idle_container, "before")
    newer = record_newer(idle_container, "before", version=2)
    head = create(idle_container, "after")
    runner = idle_container.runners["projections"]  # every view of the main group, for real
    runner.catch_up()
    assert runner.position == head
    for name in runner.names:
        assert idle_container.tracking.max_tracking_id(name) == head
    assert catalog_streams(idle_container) == {
        StreamRef("context", "ns", n).id for n in ("before", "after")}
    assert gauge(runner, "cs_projection_unknown_events_total", "context_catalog") == 1
    assert newer < head


def test_a_projection_never_sees_an_event_of_an_unknown_type(idle_container: Container) -> None:
    first = create(idle_container, "first")
    newer = record_newer(idle_container, "first", version=2)
    head = create(idle_container, "second")
    projection = Positions(idle_container)
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)])
    runner.start()
    try:
        assert runner.wait_for(head, 10)
    finally:
        runner.stop()
    assert [r.position for r in projection.seen] == [first, head]
    assert projection.applied(idle_container) == [first, head]
    assert idle_container.tracking.max_tracking_id(projection.name) == head
    assert newer in logged_positions(idle_container)


def test_an_event_of_an_unknown_type_reads_back_with_its_stored_fields(
        idle_container: Container) -> None:
    create(idle_container, "kept")
    newer = record_newer(idle_container, "kept", version=2)
    [recorded] = [r for r in idle_container.store.read(0, 100) if r.position == newer]
    assert recorded.name == NEWER and recorded.stream == StreamRef("context", "ns", "kept")
    assert isinstance(recorded.event, UnknownEvent)
    assert recorded.event.fields == NEWER_FIELDS
    assert recorded.event.actor == "user:bob"
    assert recorded.event.at.isoformat() == "2026-12-01T10:00:00.500000+00:00"


def test_loading_an_aggregate_refuses_an_event_of_an_unknown_type() -> None:
    body = msgspec.json.encode(NEWER_FIELDS)
    state = msgspec.json.encode({"k": "context", "ns": "ns", "key": "x", "e": msgspec.Raw(body)})
    assert isinstance(from_stored(7, 2, NEWER, state).event, UnknownEvent)
    with pytest.raises(UnknownEventTypeError, match=NEWER):
        from_stored(7, 2, NEWER, state, strict=True)


# -- a poison event ----------------------------------------------------------------------------


def test_a_poison_event_holds_back_only_its_projection_and_only_from_itself(
        idle_container: Container, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="context_service.adapters.eventstore.runner")
    good = create(idle_container, "good")
    poison = create(idle_container, "poison")
    head = create(idle_container, "later")
    poisoned, healthy = Positions(idle_container, poison=poison), Positions(idle_container)
    listened = Listened()
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(poisoned, lambda cur: cur), (healthy, lambda cur: cur)],
                              listeners=[listened])
    runner.start()
    try:
        # the event before the poison is committed, in one batch with it
        assert runner.wait_for(poison - 1, 10)
        assert runner.position == poison - 1
        assert poisoned.applied(idle_container) == [good]
        assert idle_container.tracking.max_tracking_id(poisoned.name) == poison - 1
        # the other projection of the group goes past it
        assert healthy.applied(idle_container) == [good, poison, head]
        assert listened.positions == [good]  # what every projection of the group applied
        assert idle_container.tracking.max_tracking_id(healthy.name) == head
        assert gauge(runner, "cs_projection_blocked", poisoned.name) == poison
        assert gauge(runner, "cs_projection_blocked", healthy.name) == 0
        assert gauge(runner, "cs_projection_failures_total", poisoned.name) >= 1
        [line] = {r.getMessage() for r in caplog.records if poisoned.name in r.getMessage()}
        assert str(poison) in line and "ContextCreated" in line
        assert "cannot apply ContextCreated" in line

        poisoned.cured.set()  # a fixed handler (or database): retried with the backoff
        assert runner.wait_for(head, 10)
    finally:
        runner.stop()
    assert poisoned.applied(idle_container) == logged_positions(idle_container)
    assert listened.positions == logged_positions(idle_container)  # each once, in order
    assert idle_container.tracking.max_tracking_id(poisoned.name) == head
    assert gauge(runner, "cs_projection_blocked", poisoned.name) == 0


# -- stop --------------------------------------------------------------------------------------


def test_a_timed_out_stop_leaves_the_running_batch_unable_to_commit(
        idle_container: Container) -> None:
    create(idle_container, "long")
    projection = Positions(idle_container, hold=True)
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)])
    runner.start()
    assert projection.entered.wait(10)
    [loop] = [t for t in threading.enumerate() if t.name == "projections-" + projection.name]
    runner.stop(timeout=0.2)  # the batch is still running
    projection.release.set()  # it ends now, after stop returned
    loop.join(10)
    assert not loop.is_alive()
    assert projection.applied(idle_container) == []  # rolled back, not committed
    assert idle_container.tracking.max_tracking_id(projection.name) in (None, 0)
    assert runner.position == 0


def test_catch_up_stops_at_a_poison_event_and_a_rebuild_fails_at_it(
        idle_container: Container) -> None:
    good = create(idle_container, "good")
    poison = create(idle_container, "poison")
    create(idle_container, "later")
    poisoned = Positions(idle_container, poison=poison)
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(poisoned, lambda cur: cur)])
    runner.catch_up()  # a worker starting: it goes as far as it can, then its loop retries
    assert runner.position == poison - 1 and runner.blocked == {poisoned.name: poison}
    assert poisoned.applied(idle_container) == [good]
    with pytest.raises(PoisonEventError, match=f"{poisoned.name} held at {poison}"):
        runner.rebuild()  # complete views or a failure, never views stopped short in silence
    assert poisoned.applied(idle_container) == [good]


class Sleeping:
    """A projection whose batch runs one long statement (a large index, a lock waited for)."""

    tables: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.name = "test-sleeping-" + uuid.uuid4().hex[:8]
        self.entered = threading.Event()
        self.errors: list[Exception] = []

    def apply(self, cur: Any, batch: Sequence[Recorded]) -> None:
        self.entered.set()
        try:
            cur.execute("SELECT pg_sleep(120)")
        except Exception as exc:
            self.errors.append(exc)
            raise


def test_a_timed_out_stop_cancels_the_running_statement(idle_container: Container) -> None:
    create(idle_container, "slow")
    projection = Sleeping()
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)])
    runner.start()
    assert projection.entered.wait(10)
    [loop] = [t for t in threading.enumerate() if t.name == "projections-" + projection.name]
    runner.stop(timeout=1.0)
    loop.join(30)  # far sooner than the statement's two minutes: it was cancelled
    assert not loop.is_alive()
    assert [type(e).__name__ for e in projection.errors] == ["QueryCanceled"]
    assert idle_container.tracking.max_tracking_id(projection.name) in (None, 0)
