"""Views catch up on events they passed over: a version that does not know an event type (an
older one, during a rolling upgrade) passes over its events and notes them; the first start of a
version that knows the type rebuilds each view that passed over them, so none stays without
them for ever."""

from __future__ import annotations

import logging

import pytest

from context_service.adapters.eventstore.runner import PassedOver, ProjectionRunner
from context_service.bootstrap import Container
from context_service.domain.events import Event
from context_service.domain.registry import EVENTS
from context_service.domain.stream import StreamRef
from tests.projections.test_unknown_and_poison_events import (
    Positions,
    catalog_streams,
    logged_positions,
)
from tests.support.newer_events import NEWER, create, record_newer

pytestmark = pytest.mark.postgres


class Renamed(Event, frozen=True, kw_only=True, tag=NEWER):
    """The newer version's event (``tests.support.newer_events``), as that version knows it."""

    new_name: str
    reason: str


def upgrade(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process now knows the newer version's event type."""
    monkeypatch.setitem(EVENTS, NEWER, Renamed)


def runner_of(container: Container, projection: Positions) -> ProjectionRunner:
    return ProjectionRunner(container.store, container.tracking, [(projection, lambda cur: cur)])


def test_a_view_notes_the_events_of_unknown_types_it_passes_over(
        idle_container: Container) -> None:
    first = create(idle_container, "a")
    newer = record_newer(idle_container, "a", version=2)
    create(idle_container, "b")
    newest = record_newer(idle_container, "b", version=2)
    projection = Positions(idle_container)
    runner = runner_of(idle_container, projection)
    runner.catch_up()
    assert runner.passed_over() == [PassedOver(projection.name, NEWER, newer, newest, 2)]
    # noted once: a second catch-up (nothing new) neither rebuilds nor counts them again
    assert runner.recover() == []
    runner.catch_up()
    assert runner.passed_over() == [PassedOver(projection.name, NEWER, newer, newest, 2)]
    assert projection.applied(idle_container) == [
        p for p in logged_positions(idle_container) if p not in (newer, newest)]
    assert projection.seen[0].position == first


def test_the_first_start_of_a_version_that_knows_the_type_rebuilds_the_view(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    create(idle_container, "a")
    newer = record_newer(idle_container, "a", version=2)
    head = create(idle_container, "b")
    projection = Positions(idle_container)
    runner_of(idle_container, projection).catch_up()  # the older version
    assert newer not in projection.applied(idle_container)

    upgrade(monkeypatch)
    caplog.set_level(logging.WARNING, logger="context_service.adapters.eventstore.runner")
    runner = runner_of(idle_container, projection)  # the newer version's first start
    runner.catch_up()
    assert projection.applied(idle_container) == logged_positions(idle_container)
    [applied] = [r for r in projection.seen if r.position == newer]
    assert isinstance(applied.event, Renamed) and applied.event.new_name == "renamed"
    assert runner.position == head
    assert idle_container.tracking.max_tracking_id(projection.name) == head
    assert runner.passed_over() == []  # forgotten with the rebuild: no second rebuild
    assert runner.recover() == []
    [line] = [r.getMessage() for r in caplog.records if projection.name in r.getMessage()]
    assert f"passed over 1 events of type {NEWER} (positions {newer} to {newer})" in line


def test_only_the_views_that_passed_over_a_known_type_are_rebuilt(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    create(idle_container, "a")
    newer = record_newer(idle_container, "a", version=2)
    passed, later = Positions(idle_container), Positions(idle_container)
    runner_of(idle_container, passed).catch_up()  # the older version
    upgrade(monkeypatch)
    head = create(idle_container, "b")
    runner_of(idle_container, later).catch_up()  # a view the newer version ran from the start
    seen = len(later.seen)
    runner = ProjectionRunner(idle_container.store, idle_container.tracking,
                              [(passed, lambda cur: cur), (later, lambda cur: cur)])
    assert runner.recover() == [passed.name]
    runner.catch_up()
    assert passed.applied(idle_container) == later.applied(idle_container) \
        == logged_positions(idle_container)
    assert len(later.seen) == seen  # not applied again
    assert runner.position == head and newer < head


def test_a_type_still_unknown_rebuilds_nothing_and_a_rebuild_notes_it_again(
        idle_container: Container) -> None:
    create(idle_container, "a")
    newer = record_newer(idle_container, "a", version=2)
    projection = Positions(idle_container)
    runner = runner_of(idle_container, projection)
    runner.catch_up()
    seen = len(projection.seen)
    runner_of(idle_container, projection).catch_up()  # the same version starting again
    assert len(projection.seen) == seen
    runner.rebuild()
    assert runner.passed_over() == [PassedOver(projection.name, NEWER, newer, newer, 1)]


def test_the_service_views_take_the_events_in_after_the_upgrade(
        idle_container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real views of the main group, rebuilt by their runner's catch-up at start."""
    create(idle_container, "before")
    record_newer(idle_container, "before", version=2)
    head = create(idle_container, "after")
    runner = idle_container.runners["projections"]
    runner.catch_up()
    assert {p.projection for p in runner.passed_over()} == set(runner.names)
    upgrade(monkeypatch)
    runner.catch_up()
    assert runner.passed_over() == []
    assert runner.position == head
    assert catalog_streams(idle_container) == {
        StreamRef("context", "ns", n).id for n in ("before", "after")}
