"""Edges of the projection runner's background loop: a stop that timed out (a batch still
running) followed by a start never leaves two loops on one runner, and a batch that keeps failing
is retried with a growing pause instead of twice a second for ever."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from context_service.adapters.eventstore.runner import ProjectionRunner
from context_service.bootstrap import Container
from context_service.domain.context.commands import CreateContext
from context_service.domain.events import Subject
from context_service.domain.stream import Recorded

pytestmark = pytest.mark.postgres
OWNER = Subject("user", "alice")


def create(container: Container, name: str) -> int:
    return container.contexts.execute("ns", name, CreateContext(
        actor=OWNER, name=name, namespace="ns", type="memory", backend="pvc", size="1Gi",
        access_mode="ReadWriteOnce")).position


class Recording:
    """A projection whose view is a table of the positions applied."""

    prefix = "test-recording-"

    def __init__(self, container: Container) -> None:
        self.name = self.prefix + uuid.uuid4().hex[:8]
        self.tables = ("t_" + self.name.replace("-", "_"),)
        with container.datastore.transaction(commit=True) as cur:
            cur.execute(f"CREATE TABLE {self.tables[0]} (position int8 PRIMARY KEY)")

    def apply(self, cur: Any, batch: Sequence[Recorded]) -> None:
        for recorded in batch:
            cur.execute(f"INSERT INTO {self.tables[0]} VALUES (%s)", (recorded.position,))

    def applied(self, container: Container) -> list[int]:
        with container.datastore.transaction(commit=False) as cur:
            cur.execute(f"SELECT position FROM {self.tables[0]} ORDER BY position")
            return [row["position"] for row in cur.fetchall()]


class Blocking(Recording):
    """A ``Recording`` whose batches wait for ``release`` (a long batch, say a large index); each
    position is applied at most once."""

    prefix = "test-blocking-"

    def __init__(self, container: Container) -> None:
        super().__init__(container)
        self.entered, self.release = threading.Event(), threading.Event()

    def apply(self, cur: Any, batch: Sequence[Recorded]) -> None:
        self.entered.set()
        self.release.wait(30)
        super().apply(cur, batch)


class Failing:
    """A projection that fails every batch (an event it cannot apply)."""

    tables: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.name = "test-failing-" + uuid.uuid4().hex[:8]
        self.calls: list[float] = []

    def apply(self, view: Any, batch: Sequence[Recorded]) -> None:
        self.calls.append(time.monotonic())
        raise ValueError("cannot apply this event")


def loops_of(runner: ProjectionRunner) -> list[threading.Thread]:
    name = "projections-" + "+".join(runner.names)
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


def test_a_start_after_a_timed_out_stop_runs_one_loop(idle_container: Container) -> None:
    create(idle_container, "first")
    projection = Blocking(idle_container)
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)])
    runner.start()
    assert projection.entered.wait(10)
    runner.stop(timeout=0.2)  # the batch goes on: the loop ends once it committed
    runner.start()  # leadership regained at once, say
    projection.release.set()
    head = create(idle_container, "second")
    assert runner.wait_for(head, 10)
    deadline = time.monotonic() + 5
    while len(loops_of(runner)) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert len(loops_of(runner)) == 1  # the stopped loop ended after its batch
    finally:
        runner.stop()
    assert loops_of(runner) == []
    logged = [r.position for r in idle_container.store.read(0, 100_000)]
    assert projection.applied(idle_container) == logged  # each event once, none skipped
    assert idle_container.tracking.max_tracking_id(projection.name) == head


def test_a_failing_batch_is_retried_with_a_growing_pause(idle_container: Container) -> None:
    create(idle_container, "poison")
    projection = Failing()
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)])
    runner.start()
    try:
        time.sleep(4.2)
    finally:
        started = time.monotonic()
        runner.stop()
    assert time.monotonic() - started < 1  # a stop ends the pause at once
    assert 2 <= len(projection.calls) <= 4  # 0.5 s, 1 s, 2 s apart, not every 0.5 s (9 calls)
    pauses = [b - a for a, b in itertools.pairwise(projection.calls)]
    assert all(later > earlier for earlier, later in itertools.pairwise(pauses))
    assert idle_container.tracking.max_tracking_id(projection.name) in (None, 0)


def test_a_read_is_never_told_a_position_the_views_lost_is_reached(
        idle_container: Container) -> None:
    """A crash of the database loses the projection batches committed asynchronously: the
    runner remembers positions its views no longer hold. Its next batch fails (the tracking is
    not where it remembers); from then until it has read its positions again, a read waiting
    for a position is not told it is reached (it was answered from a view without the row)."""
    first = create(idle_container, "first")
    projection = Recording(idle_container)
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)])
    runner.start()
    try:
        assert runner.wait_for(first, 10) and first in projection.applied(idle_container)
        with idle_container.datastore.transaction(commit=True) as cur:  # what the crash lost
            cur.execute(f"DELETE FROM {projection.tables[0]}")
            cur.execute(f"UPDATE {idle_container.tracking.tracking_table_name}"
                        " SET notification_id = 0 WHERE application_name = %s",
                        (projection.name,))
        second = create(idle_container, "second")  # the next batch fails on the tracking
        deadline = time.monotonic() + 10
        while not runner._suspect and time.monotonic() < deadline:
            time.sleep(0.01)
        assert runner._suspect
        assert runner.wait_for(first, 10)  # only once the positions were read again ...
        assert first in projection.applied(idle_container)  # ... and the lost batch applied
        assert runner.wait_for(second, 10)
        assert projection.applied(idle_container)[-1] == second
    finally:
        runner.stop()
