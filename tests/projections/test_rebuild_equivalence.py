"""The central read-model property: views built live equal views rebuilt from zero and views
resumed from any checkpoint; re-delivering a tracked position changes nothing."""

from __future__ import annotations

import msgspec
import pytest
from eventsourcing.persistence import IntegrityError, Tracking
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_service.adapters.eventstore.indexes import index_records
from context_service.bootstrap import Container
from context_service.domain.context.events import (
    ContextCreated,
    ContextDeleted,
    FieldSpan,
    QueryIndexPublished,
    QueryRecord,
    RecordField,
)
from context_service.domain.query.index import layout
from tests.projections.access_history import write_access_history
from tests.projections.history import write_history
from tests.projections.pack_support import collection, publish
from tests.projections.set_history import write_set_history
from tests.support.hypothesis_profiles import scaled
from tests.support.views import snapshot

pytestmark = pytest.mark.postgres


def catch_up_all(container: Container) -> None:
    for runner in container.runners.values():
        runner.catch_up()


def _fielded_index(container: Container) -> None:
    """A usable index with studied fields, one of them restated later in its document."""
    rev = "f" * 64
    collection(container.contexts, "fielded", rev)
    records = tuple(QueryRecord(
        id=f"f{i}", context="fielded", type="memory", revision=rev, text=f"total {i} EUR",
        file=f"doc{i % 3}.md", fields=(
            RecordField("total", "money", {"amount": f"{i}.50", "currency": "EUR"},
                        FieldSpan(6, 7)),
            RecordField("region", "text", "EMEA" if i % 2 else "\x00APAC")))
        for i in range(7))
    publish(container.contexts, "fielded", rev, records)


def test_live_views_equal_rebuilt_views(container: Container) -> None:
    assert write_history(container.contexts, seed=7, steps=300) > 50
    _fielded_index(container)
    assert write_access_history(container, seed=7, steps=200) > 40
    assert write_set_history(container.context_sets, seed=7, steps=120) > 20
    head = container.store.head()
    for runner in container.runners.values():
        assert runner.wait_for(head, timeout=30)
    live = snapshot(container)
    assert live["context_catalog"], "the history should leave contexts behind"
    assert live["workspace_members"] and live["agent_credentials"]
    assert live["context_sets"], "the history should leave context sets behind"
    assert live["passage_features"] and live["pack_inputs"], "features and pack inputs too"
    assert live["agent_data.fields"] and live["agent_data.field_names"], "studied fields too"
    assert_indexes_assemble_from_the_log(container)
    for runner in container.runners.values():
        runner.stop()
        runner.rebuild()
    assert snapshot(container) == live


def assert_indexes_assemble_from_the_log(container: Container) -> None:
    """Each context's searchable records are the records of its last publication as read from
    the log (multi-part uploads assembled), and the history held multi-part publications."""
    published = {}
    uploads = 0
    for recorded in container.store.read(0, 100_000):
        if isinstance(recorded.event, QueryIndexPublished):
            published[recorded.stream.id] = recorded.position
            uploads += bool(recorded.event.upload_id)
        elif isinstance(recorded.event, ContextDeleted | ContextCreated):
            published.pop(recorded.stream.id, None)
    assert uploads >= 3, "the history should complete several multi-part uploads"
    decoder = msgspec.json.Decoder(QueryRecord)
    with container.datastore.transaction(commit=False) as cur:
        cur.execute("SELECT stream_id, doc FROM query_records ORDER BY stream_id, ord")
        stored: dict[object, list[QueryRecord]] = {}
        for row in cur.fetchall():
            stored.setdefault(row["stream_id"], []).append(decoder.decode(row["doc"]))
    assert stored, "the history should leave searchable records behind"
    for stream_id, records in stored.items():
        expected = layout(index_records(container.store, stream_id, published[stream_id]))
        assert records == expected.records


@settings(max_examples=scaled(6), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), batch=st.integers(1, 40), stops=st.integers(1, 5))
def test_resumed_views_equal_rebuilt_views(idle_container: Container, seed: int, batch: int,
                                           stops: int) -> None:
    container = idle_container
    for runner in container.runners.values():
        runner.rebuild()
    write_history(container.contexts, seed=seed, steps=60)
    write_access_history(container, seed=seed, steps=40)
    write_set_history(container.context_sets, seed=seed, steps=40)
    # Resume from several checkpoints: small batches, each a separate transaction.
    for runner in container.runners.values():
        runner.batch_size = batch
        for _ in range(stops):
            runner.run_once()
        runner.catch_up()
    resumed = snapshot(container)
    for runner in container.runners.values():
        runner.batch_size = 2000
        runner.rebuild()
    assert snapshot(container) == resumed


def test_redelivering_a_tracked_position_changes_nothing(idle_container: Container) -> None:
    container = idle_container
    write_history(container.contexts, seed=3, steps=80)
    write_set_history(container.context_sets, seed=3, steps=30)
    catch_up_all(container)
    before = snapshot(container)
    projection, view = container.runner("context_catalog").projections[0]
    batch = container.store.read(0, 10)
    with pytest.raises(IntegrityError), container.datastore.transaction(commit=True) as cur:
        projection.apply(view(cur), batch)
        container.tracking._insert_tracking(cur, Tracking(projection.name, batch[-1].position))
    assert snapshot(container) == before
