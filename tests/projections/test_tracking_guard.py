"""A batch commits only from the position its tracking row holds.

A runner remembers how far it applied the log. That memory can disagree with the tracking row:
PostgreSQL loses the latest projection batches in a crash (they commit with
``synchronous_commit = off``) while the runner that applied them lives on; a commit whose answer
was lost leaves the runner behind; two instances overlap for a moment during a lock hand-over.
A batch read from the remembered position must then fail and be read again from the row, or the
view silently skips the lost events, or applies events twice.
"""

from __future__ import annotations

from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError

from context_service.adapters.eventstore.runner import ProjectionRunner
from context_service.adapters.eventstore.store import EventStore
from context_service.bootstrap import Container
from context_service.domain.context.commands import CreateContext
from context_service.domain.events import Subject
from context_service.domain.stream import Recorded
from tests.support.views import differences, snapshot

pytestmark = pytest.mark.postgres
OWNER = Subject("user", "alice")


def create(container: Container, *names: str) -> int:
    position = 0
    for name in names:
        position = container.contexts.execute("ns", name, CreateContext(
            actor=OWNER, name=name, namespace="ns", type="memory", backend="pvc", size="1Gi",
            access_mode="ReadWriteOnce")).position
    return position


class LogUpTo:
    """The event store as a reader that stops at ``last`` (everything else delegated)."""

    def __init__(self, store: EventStore, last: int) -> None:
        self.store, self.last = store, last

    def read(self, after: int, limit: int, stop: int | None = None) -> list[Recorded]:
        return self.store.read(after, limit, min(stop or self.last, self.last))

    def head(self) -> int:
        return min(self.store.head(), self.last)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def lose_batches_after(container: Container, runner: ProjectionRunner, position: int) -> None:
    """Leave the group's views and tracking rows as crash recovery does when the batches after
    ``position`` had not reached the disk: as if the log had been applied up to there only."""
    store: Any = LogUpTo(container.store, position)
    ProjectionRunner(store, container.tracking, runner.projections).rebuild()


def rebuilt(container: Container) -> dict[str, list[Any]]:
    for runner in container.runners.values():
        runner.rebuild()
    return snapshot(container)


def test_a_runner_that_remembers_a_lost_batch_applies_it_again(
        idle_container: Container) -> None:
    container = idle_container
    runner = container.runner("context_catalog")
    kept = create(container, "a", "b")
    runner.catch_up()
    create(container, "c", "d")
    runner.catch_up()  # applied and committed, then lost with the server's last WAL
    lose_batches_after(container, runner, kept)
    head = create(container, "e")
    runner.start()
    try:
        assert runner.wait_for(head, timeout=10)
    finally:
        runner.stop()
    container.runner("query_index").catch_up()
    container.runner("agent_data").catch_up()
    live = snapshot(container)
    assert {r for r in live["context_catalog"] if ("name", "c") in r}, "c is missing"
    assert differences(live, rebuilt(container)) == {}


def test_a_stale_runner_does_not_apply_a_batch_twice(idle_container: Container) -> None:
    container = idle_container
    create(container, "a", "b")
    first, stale = (container.runner_for(["context_catalog"]) for _ in range(2))
    first.catch_up()  # the other instance, or a commit whose answer never came back
    create(container, "c")
    with pytest.raises(IntegrityError):
        stale.run_once()
    stale.refresh()
    stale.catch_up()
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT name, (doc->>'generation')::int AS g FROM context_catalog")
        assert {r["name"]: r["g"] for r in cur.fetchall()} == {"a": 1, "b": 1, "c": 1}
    catalog = ("context_catalog", "context_grants")
    live = {t: rows for t, rows in snapshot(container).items() if t in catalog}
    again = {t: rows for t, rows in rebuilt(container).items() if t in catalog}
    assert live == again
