"""The query_index read model over real PostgreSQL: rebuild equivalence (live = rebuilt = resumed
from any checkpoint), exactly-once tracking, and what one batch folds (latest index only,
deletion drops, a new generation starts without an index)."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError, Tracking
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_service.adapters.eventstore.application import ContextApplication
from context_service.adapters.eventstore.runner import ProjectionRunner
from context_service.bootstrap import Container
from context_service.domain.context import commands as c
from context_service.domain.context.events import QueryRecord, SourceRef
from context_service.domain.errors import DomainError
from context_service.domain.events import ADMIN
from context_service.domain.stream import context_stream
from context_service.projections.query_index.projection import QueryIndex
from tests.support.hypothesis_profiles import scaled

pytestmark = pytest.mark.postgres

NAMES = ("alpha", "beta", "gamma", "delta")
WORDS = ("release", "schedule", "notes", "Straße", "v2", "东京", "x", "plan", "deploy")
TABLES = ("query_contexts", "query_records", "query_postings")
WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def _digest(rng: random.Random) -> str:
    return f"{rng.getrandbits(256):064x}"


def _records(rng: random.Random, name: str, type_: str, revision: str) -> tuple[QueryRecord, ...]:
    def words(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    return tuple(
        QueryRecord(id=rng.choice("abcde") + str(rng.randrange(3)), context=name, type=type_,
                    revision=revision, text=words(rng.randint(1, 12)), title=words(2),
                    keywords=tuple(words(1) for _ in range(rng.randrange(3))),
                    source=SourceRef(rng.choice(("", "src")), "state", ""))
        for _ in range(rng.randrange(6)))


def _command(app: ContextApplication, rng: random.Random, name: str) -> c.Command:
    _, state = app.load("ns", name)
    pick = rng.randrange(20)
    if not state.live or pick == 0:
        return c.CreateContext(actor=ADMIN, name=name, namespace="ns", backend="pvc",
                               type=rng.choice(("memory", "knowledge", "state")), size="1Gi",
                               access_mode="ReadWriteOnce")
    if pick <= 6 or not state.current_revision:
        return c.PublishRevision(actor=ADMIN, id=_digest(rng), created_at=WHEN, operation="sync")
    if pick == 7:
        return c.DeleteContext(actor=ADMIN, force=True)
    return c.PublishQueryIndex(actor=ADMIN, revision=state.current_revision,
                               records=_records(rng, name, state.type, state.current_revision))


def write_history(app: ContextApplication, seed: int, steps: int) -> int:
    rng = random.Random(seed)
    indexes = 0
    for _ in range(steps):
        name = rng.choice(NAMES)
        command = _command(app, rng, name)
        try:
            app.execute("ns", name, command)
        except DomainError:
            continue
        indexes += isinstance(command, c.PublishQueryIndex)
    return indexes


def snapshot(container: Container) -> dict[str, list[Any]]:
    tables: dict[str, list[Any]] = {}
    with container.datastore.transaction(commit=False) as cur:
        for table in TABLES:
            cur.execute(f"SELECT * FROM {table}")
            tables[table] = sorted(tuple(sorted((k, str(v)) for k, v in r.items()))
                                   for r in cur.fetchall())
    return tables


def runner(container: Container, batch: int = 2000) -> ProjectionRunner:
    fresh = container.runner_for(["query_index"])
    fresh.batch_size = batch
    return fresh


def test_live_index_equals_rebuilt_index(container: Container) -> None:
    assert write_history(container.contexts, seed=11, steps=250) > 20
    assert container.runner("query_index").wait_for(container.store.head(), timeout=30)
    live = snapshot(container)
    assert live["query_records"] and live["query_postings"]
    container.runner("query_index").stop()
    runner(container).rebuild()
    assert snapshot(container) == live


@settings(max_examples=scaled(8), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), batch=st.integers(1, 30), stops=st.integers(1, 6))
def test_resumed_index_equals_rebuilt_index(idle_container: Container, seed: int, batch: int,
                                            stops: int) -> None:
    container = idle_container
    runner(container).rebuild()
    write_history(container.contexts, seed=seed, steps=80)
    resuming = runner(container, batch)
    for _ in range(stops):
        resuming.run_once()
    runner(container, batch + 7).catch_up()  # a new process resumes from the checkpoint
    resumed = snapshot(container)
    runner(container).rebuild()
    assert snapshot(container) == resumed


def test_redelivering_a_tracked_position_changes_nothing(idle_container: Container) -> None:
    container = idle_container
    write_history(container.contexts, seed=5, steps=60)
    runner(container).catch_up()
    before = snapshot(container)
    projection, view = runner(container).projections[0]
    batch = container.store.read(0, 50)
    with pytest.raises(IntegrityError), container.datastore.transaction(commit=True) as cur:
        projection.apply(view(cur), batch)
        container.tracking._insert_tracking(cur, Tracking(projection.name, batch[-1].position))
    assert snapshot(container) == before


def _memory(app: ContextApplication, name: str, revision: str) -> None:
    app.execute("ns", name, c.CreateContext(actor=ADMIN, name=name, namespace="ns",
                                            type="memory", backend="pvc", size="1Gi",
                                            access_mode="ReadWriteOnce"))
    app.execute("ns", name, c.PublishRevision(actor=ADMIN, id=revision, created_at=WHEN,
                                              operation="sync"))


def _index(app: ContextApplication, name: str, revision: str, *texts: str) -> None:
    records = tuple(QueryRecord(id=f"r{i}", context=name, type="memory", revision=revision,
                                text=t) for i, t in enumerate(texts))
    app.execute("ns", name, c.PublishQueryIndex(actor=ADMIN, revision=revision, records=records))


def _rows(container: Container, sql: str) -> list[dict[str, Any]]:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute(sql)
        return list(cur.fetchall())


def test_one_batch_keeps_only_the_latest_index(idle_container: Container) -> None:
    container, app = idle_container, idle_container.contexts
    _memory(app, "notes", "1" * 64)
    _index(app, "notes", "1" * 64, "old words", "older")
    _index(app, "notes", "1" * 64, "new words")
    app.execute("ns", "notes", c.PublishRevision(actor=ADMIN, id="2" * 64, created_at=WHEN,
                                                 operation="sync"))
    one_batch = runner(container)
    one_batch.catch_up()
    projection = one_batch.projections[0][0]
    assert isinstance(projection, QueryIndex)
    assert projection.indexed == 1  # the superseded index is never laid out
    [row] = _rows(container, "SELECT * FROM query_contexts")
    assert row["stream_id"] == context_stream("ns", "notes").id
    assert (row["index_revision"], row["current_revision"], row["records"]) == (
        "1" * 64, "2" * 64, 1)
    postings = _rows(container, "SELECT term, ords, weights FROM query_postings ORDER BY term")
    assert postings == [{"term": "new", "ords": [0], "weights": [1]},
                        {"term": "words", "ords": [0], "weights": [1]}]


@pytest.mark.parametrize("batch", [1, 2000])
def test_deletion_drops_and_a_new_generation_starts_without_index(idle_container: Container,
                                                                  batch: int) -> None:
    container, app = idle_container, idle_container.contexts
    _memory(app, "notes", "1" * 64)
    _index(app, "notes", "1" * 64, "words")
    _memory(app, "other", "3" * 64)
    _index(app, "other", "3" * 64, "kept")
    runner(container, batch).catch_up()
    app.execute("ns", "notes", c.DeleteContext(actor=ADMIN, force=True))
    runner(container, batch).catch_up()
    assert [r["name"] for r in _rows(container, "SELECT name FROM query_contexts")] == ["other"]
    assert len(_rows(container, "SELECT * FROM query_records")) == 1
    _memory(app, "notes", "1" * 64)
    runner(container, batch).catch_up()
    rows = _rows(container, "SELECT name, index_revision FROM query_contexts ORDER BY name")
    assert rows == [{"name": "notes", "index_revision": None},
                    {"name": "other", "index_revision": "3" * 64}]
    assert len(_rows(container, "SELECT * FROM query_postings")) == 1
