"""Against PostgreSQL: a view that an older instance passes over events for while this version
takes its worker over (the two overlap for a moment when the advisory lock changes hands) is
still rebuilt, a rebuild lets a read in the same process be told the view is current only while
it reads the old complete rows, and a history read sorts no more of the stream than it returns."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from context_service.adapters.eventstore import mapper
from context_service.adapters.eventstore.runner import ProjectionRunner
from context_service.adapters.eventstore.timeline import Timeline
from context_service.bootstrap import Container
from context_service.domain.registry import EVENTS
from tests.projections.test_passed_over_recovery import upgrade
from tests.projections.test_unknown_and_poison_events import Positions, logged_positions
from tests.support.newer_events import NEWER, create, record_newer

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def own_decoders(monkeypatch: pytest.MonkeyPatch) -> None:
    """The newer event's class is this module's import of it: the mapper's decoders, cached by
    name, must not keep it for the modules that run after (nor bring another one in)."""
    monkeypatch.setattr(mapper, "_decoders", {
        name: decoder for name, decoder in mapper._decoders.items() if name != NEWER})


def runner_of(container: Container, projection: Positions) -> ProjectionRunner:
    return ProjectionRunner(container.store, container.tracking, [(projection, lambda cur: cur)])


def test_events_an_older_instance_passes_over_during_the_handover_are_rebuilt(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    create(idle_container, "a")
    newer = record_newer(idle_container, "a", version=2)
    create(idle_container, "b")
    projection = Positions(idle_container)
    older = runner_of(idle_container, projection)  # lost the lock; its batch is under way
    upgrade(monkeypatch)
    newest = runner_of(idle_container, projection)  # took the lock over: catches up at start
    real_refresh: Callable[[], None] = newest.refresh
    handed_over = False

    def older_commits_first() -> None:
        """The older instance's batch commits (passing over ``newer``, noting it, moving the
        tracking row) just as the newer one reads its positions."""
        nonlocal handed_over
        if not handed_over:
            handed_over = True
            with monkeypatch.context() as older_version:
                older_version.delitem(EVENTS, NEWER)
                older.catch_up()
        real_refresh()

    monkeypatch.setattr(newest, "refresh", older_commits_first)
    newest.catch_up()
    assert handed_over
    # the view holds every event, the one passed over too, and nothing is left noted: a view
    # without it until the worker's next start (days away) answers wrong meanwhile
    assert newer in projection.applied(idle_container)
    assert newest.passed_over() == []


class _Applied:
    """A listener of the runner: set once a batch it committed holds ``position``, or once it
    is reset after a rebuild committed a view that holds it (``holds``)."""

    def __init__(self, holds: Callable[[int], bool]) -> None:
        self.position = 0
        self.done = threading.Event()
        self.holds = holds

    def applied(self, batch: Any) -> None:
        if any(recorded.position == self.position for recorded in batch):
            self.done.set()

    def reset(self) -> None:
        if self.position and self.holds(self.position):
            self.done.set()


def test_events_an_older_instance_passes_over_while_this_one_runs_are_rebuilt(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same overlap met by the running loop: its batch is refused (the older instance moved
    the tracking row past the event), it reads its positions again, and must then see the note
    that came with them."""
    create(idle_container, "a")
    projection = Positions(idle_container)
    seen = _Applied(lambda position: position in projection.applied(idle_container))
    upgrade(monkeypatch)
    newest = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(projection, lambda cur: cur)], listeners=[seen])
    newest.catch_up()
    older = runner_of(idle_container, projection)  # its lock just lost, still running
    seen.position = record_newer(idle_container, "a", version=2)
    with monkeypatch.context() as older_version:
        older_version.delitem(EVENTS, NEWER)
        assert older.run_once() == 1  # passed over and noted, the tracking row moved past it
    newest.start()
    try:
        applied = seen.done.wait(30)
    finally:
        newest.stop()
    assert applied, "the running view never applied the event the older instance passed over"
    assert seen.position in projection.applied(idle_container)
    assert newest.passed_over() == []


def test_a_view_rebuilt_is_reported_caught_up_only_with_its_old_rows(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    create(idle_container, "a")
    record_newer(idle_container, "a", version=2)
    head = create(idle_container, "b")
    projection = Positions(idle_container)
    runner_of(idle_container, projection).catch_up()  # the older version passed it over
    upgrade(monkeypatch)
    runner = runner_of(idle_container, projection)  # the newer version's worker, serving reads
    assert runner.wait_for(head, 0)  # before the rebuild: current as far as it knows
    before = projection.applied(idle_container)
    seen: list[tuple[bool, list[int]]] = []
    real_forget = runner._forget

    def forget(cur: Any, chosen: Any) -> None:
        """A read in this process once the rebuild deleted the rows (not yet committed)."""
        real_forget(cur, chosen)
        seen.append((runner.wait_for(head, 0), projection.applied(idle_container)))

    monkeypatch.setattr(runner, "_forget", forget)
    assert runner.recover() == [projection.name]
    assert seen == [(True, before)]  # told it is current, and it reads the old complete rows
    assert runner.position == head
    assert projection.applied(idle_container) == logged_positions(idle_container)


# --- the history read of one stream ---------------------------------------------------------


class _Recording:
    """A cursor that keeps the statements it runs."""

    def __init__(self, cursor: Any, statements: list[tuple[str, Any]]) -> None:
        self._cursor, self._statements = cursor, statements

    def execute(self, sql: str, params: Any = None, **kwargs: Any) -> Any:
        self._statements.append((sql, params))
        return self._cursor.execute(sql, params, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cursor, name)


def _sorts(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if plan["Node Type"] == "Sort":
        yield plan
    for child in plan.get("Plans", []):
        yield from _sorts(child)


def test_a_history_chunk_sorts_no_more_than_it_returns_with_the_events_payloads(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of a long history keeps ``limit`` events in its sort (a top-N sort, as before the
    reads were bounded in bytes), not every later event of the stream with its payload: the
    running byte total must not make the statement sort the rest of the stream each chunk."""
    create(idle_container, "long")
    for version in range(2, 202):
        record_newer(idle_container, "long", version=version)
    statements: list[tuple[str, Any]] = []
    real = idle_container.datastore.transaction

    @contextlib.contextmanager
    def recording(commit: bool = False) -> Iterator[Any]:
        with real(commit=commit) as cur:
            yield _Recording(cur, statements)

    monkeypatch.setattr(idle_container.datastore, "transaction", recording)
    events = Timeline(idle_container.store).events("ns", "long", 0, 10, 0)
    monkeypatch.setattr(idle_container.datastore, "transaction", real)
    assert len(events) == 10
    [(sql, params)] = statements
    with real(commit=False) as cur:
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        [[document]] = [list(row.values()) for row in cur.fetchall()]
    sorts = list(_sorts(document[0]["Plan"]))
    # a sort fed more rows than the chunk returns may only keep the chunk's (top-N)
    assert [s["Sort Method"] for s in sorts if s["Plans"][0]["Actual Rows"] > 10
            and s["Sort Method"] != "top-N heapsort"] == []
