"""A GC run's record stays relayable at any number of snapshots (spec 6.6, design 2.4): the run
is split into parts of bounded size, appended together, and folds (state and snapshot_objects)
exactly like one run; a run that fits one event keeps the shape it always had, and stored runs of
that shape still decode."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest

from context_service.adapters.eventstore.event_size import check_relayable
from context_service.adapters.eventstore.mapper import decode_event, to_stored
from context_service.domain.context import commands as cmd
from context_service.domain.context import events as ev
from context_service.domain.context.decide import decide
from context_service.domain.context.events import CloneSource
from context_service.domain.context.state import PERMISSIONS, ContextState, evolve
from context_service.domain.events import Event
from context_service.domain.stream import Recorded, context_stream
from context_service.http.routes import lifecycle as routes
from context_service.projections.snapshots.projection import step
from context_service.projections.snapshots.view import SnapshotObject
from tests.unit.strategies import ALICE, EPOCH, NAME, NAMESPACE

STREAM = context_stream(NAMESPACE, NAME)
# past the old limit: one event listing every name (63 characters, the longest snapshot name)
# passed 1,000,000 bytes at about 15,200 snapshots
MANY = 16_000


def long_name(i: int) -> str:
    return f"s{i:05d}-".ljust(63, "x")


def snapshot(i: int) -> ev.SnapshotRecord:
    return ev.SnapshotRecord(
        name=long_name(i), object_name=f"context-{NAME}-{i}", type="memory", size="1Gi",
        access_mode="ReadWriteOnce", storage_class="fast", snapshot_class="snap",
        created_at=EPOCH + timedelta(seconds=i), revision=f"rev-{i}", status="ready")


def holding(count: int, keep_last: int = 0) -> ContextState:
    """A live context with ``count`` snapshots, one second apart (built directly: deciding
    16,000 records one by one would fold quadratically)."""
    return ContextState(live=True, generation=1, namespace=NAMESPACE, name=NAME, type="memory",
                        grants=(ev.Grant(ALICE, PERMISSIONS, EPOCH),),
                        snapshots=tuple(snapshot(i) for i in range(count)),
                        retention=ev.Retention(keep_last, ""))


def run(state: ContextState, clones: tuple[CloneSource, ...] = ()) -> list[Event]:
    return decide(cmd.CollectSnapshots(actor=ALICE, clones=clones), state,
                  EPOCH + timedelta(days=1))


def fold(state: ContextState, events: list[Event]) -> ContextState:
    for event in events:
        state = evolve(state, event)
    return state


def relayable(events: list[Event]) -> None:
    """What the event store checks before it writes an append (raises when one is too big)."""
    check_relayable(STREAM, [to_stored(STREAM, i + 1, e) for i, e in enumerate(events)])


@pytest.mark.parametrize("keep_last", [0, 1, MANY - 1])
def test_a_run_over_many_snapshots_is_recorded_in_parts_each_small_enough(
        keep_last: int) -> None:
    state = holding(MANY, keep_last)
    events = run(state)
    relayable(events)
    assert len(events) > 1
    runs = [e for e in events if isinstance(e, ev.SnapshotsCollected)]
    assert runs == events
    assert [(e.part, e.parts) for e in runs] == [(i + 1, len(runs)) for i in range(len(runs))]
    deleted = [n for e in runs for n in e.deleted]
    kept = [n for e in runs for n in e.kept]
    cut = MANY - keep_last if keep_last else 0
    assert deleted == [long_name(i) for i in range(cut)]
    assert kept == [long_name(i) for i in range(cut, MANY)]
    assert {(e.keep_last, e.max_age) for e in runs} == {(keep_last, "")}

    after = fold(state, events)
    assert [s.name for s in after.snapshots] == kept
    assert [s.name for s in after.last_collection] == deleted


def test_the_parts_of_a_run_mark_every_deleted_object_collected() -> None:
    state = holding(MANY, 1)
    rows: dict[str, SnapshotObject] = {}
    history: list[Event] = [
        ev.SnapshotRecorded(at=s.created_at, actor=ALICE.key, name=s.name,
                            object_name=s.object_name, type=s.type, size=s.size,
                            access_mode=s.access_mode, storage_class=s.storage_class,
                            snapshot_class=s.snapshot_class) for s in state.snapshots]
    history += run(state)
    for position, event in enumerate(history, 1):
        step(rows, Recorded(position, STREAM, position, type(event).__name__, event))
    assert sorted(n for n, row in rows.items() if not row.collected) == [long_name(MANY - 1)]
    assert len(rows) == MANY


def test_a_run_that_fits_one_event_keeps_its_stored_shape() -> None:
    state = holding(3, 1)
    [event] = run(state)
    body = msgspec.json.decode(to_stored(STREAM, 1, event).state)["e"]
    assert sorted(body) == ["actor", "at", "deleted", "event", "keep_last", "kept", "max_age"]
    assert (body["deleted"], body["kept"]) == ([long_name(0), long_name(1)], [long_name(2)])


def test_a_stored_run_of_the_old_shape_is_one_whole_run() -> None:
    body = (b'{"event":"SnapshotsCollected","deleted":["a"],"kept":["b"],"keep_last":1,'
            b'"max_age":"","at":"2026-03-01T09:10:00Z","actor":"user:alice"}')
    event = decode_event("SnapshotsCollected", body)
    assert isinstance(event, ev.SnapshotsCollected)
    assert (event.part, event.parts) == (1, 1)
    state = holding(0)
    named = [msgspec.structs.replace(snapshot(i), name=n) for i, n in enumerate("ab")]
    state = msgspec.structs.replace(state, snapshots=tuple(named),
                                    last_collection=(snapshot(9),))
    after = evolve(state, event)
    assert ([s.name for s in after.snapshots], [s.name for s in after.last_collection]) == (
        ["b"], ["a"])


class CatalogReads:
    """The catalog's read port, recording what GC asks of it."""

    def __init__(self, pins: tuple[CloneSource, ...]) -> None:
        self.pins = pins
        self.asked: list[tuple[str, ...]] = []

    def clones_of(self, namespace: str, context: str) -> tuple[CloneSource, ...]:
        self.asked.append(("clones_of", namespace, context))
        return self.pins

    def list(self, namespace: str, subject: Any) -> list[ContextState]:
        self.asked.append(("list", namespace))
        return []


def test_gc_asks_the_catalog_for_the_clones_of_its_context_only() -> None:
    pins = (CloneSource(NAME, "s1", ""), CloneSource(NAME, "s2", "rev"))
    reads = CatalogReads(pins)
    found: Any = SimpleNamespace(reads=reads)
    assert routes._clones_of(found, NAMESPACE, NAME) == pins
    assert reads.asked == [("clones_of", NAMESPACE, NAME)]
