"""Writes decided on a cached state commit without a thread only while that state is current;
a write by another process makes them read the stream and decide again (real PostgreSQL)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import psycopg
import pytest
from eventsourcing.persistence import OperationalError

from context_service import bootstrap
from context_service.adapters.eventstore.application import ContextApplication
from context_service.domain.context.commands import CreateContext, GrantAccess, PublishRevision
from context_service.domain.context.events import Revision, RevisionPublished
from context_service.domain.errors import ContextExistsError
from context_service.domain.events import Subject
from context_service.domain.stream import context_stream

OWNER = Subject("user", "owner")


def create(name: str) -> CreateContext:
    return CreateContext(actor=OWNER, name=name, namespace="team", type="memory", backend="pvc",
                         size="1Gi", access_mode="ReadWriteOnce", storage_class="")


def grant(agent: str) -> GrantAccess:
    return GrantAccess(actor=OWNER, subject=Subject("agent", agent), permissions=("read",))


def test_a_stale_cache_is_refreshed_not_committed(
        idle_container: bootstrap.Container) -> None:
    here = idle_container.contexts
    elsewhere = ContextApplication(idle_container.store)  # another API process, own cache

    async def scenario() -> None:
        await here.execute_async("team", "ctx", create("ctx"))
        await here.execute_async("team", "ctx", grant("a"))
        elsewhere.execute("team", "ctx", grant("b"))  # `here` does not know of this one
        outcome = await here.execute_async("team", "ctx", grant("c"))
        assert {g.subject.name for g in outcome.state.grants} == {"owner", "a", "b", "c"}
        await here.store.close_async()

    asyncio.run(scenario())
    version, state = ContextApplication(idle_container.store).load("team", "ctx")
    assert version == 4
    assert {g.subject.name for g in state.grants} == {"owner", "a", "b", "c"}


def test_a_refusal_on_the_cache_is_confirmed_against_the_log(
        idle_container: bootstrap.Container) -> None:
    here = idle_container.contexts
    elsewhere = ContextApplication(idle_container.store)
    elsewhere.execute("team", "ctx", create("ctx"))

    async def scenario() -> None:
        # `here` has never seen the context: the cached state says "absent", so a create
        # looks fine and a revision looks refused; the log decides both.
        try:
            await here.execute_async("team", "ctx", create("ctx"))
        except ContextExistsError:
            pass
        else:
            raise AssertionError("a second create of one name committed")
        revision = PublishRevision(
            actor=OWNER, id="ab" * 32, created_at=datetime(2026, 1, 1, tzinfo=UTC),
            operation="sync", producer="", parameters={}, sources=(), files=1, bytes=1)
        outcome = await here.execute_async("team", "ctx", revision)
        assert outcome.state.current_revision == "ab" * 32
        await here.store.close_async()

    asyncio.run(scenario())


def test_concurrent_fast_writers_of_one_stream_all_land(
        idle_container: bootstrap.Container) -> None:
    app = idle_container.contexts

    async def scenario() -> None:
        await app.execute_async("team", "ctx", create("ctx"))
        await asyncio.gather(*(app.execute_async("team", "ctx", grant(f"a{i:02d}"))
                               for i in range(24)))

    asyncio.run(scenario())
    version, state = ContextApplication(idle_container.store).load("team", "ctx")
    assert version == 25
    assert {g.subject.name for g in state.grants} == {"owner"} | {f"a{i:02d}" for i in range(24)}


def test_a_lost_append_connection_fails_its_writers_and_the_next_write_reconnects(
        idle_container: bootstrap.Container, database_url: str) -> None:
    app = idle_container.contexts

    async def scenario() -> None:
        await app.execute_async("team", "a", create("a"))
        with psycopg.connect(database_url, autocommit=True) as admin:
            killed = admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE query LIKE '%cs_append_events%' AND pid <> pg_backend_pid()").fetchone()
            assert killed == (1,)
        with pytest.raises(OperationalError):
            await app.execute_async("team", "b", create("b"))
        outcome = await app.execute_async("team", "c", create("c"))
        assert outcome.position > 0
        await app.store.close_async()

    asyncio.run(scenario())
    assert ContextApplication(idle_container.store).load("team", "b")[0] == 0  # not written
    assert ContextApplication(idle_container.store).load("team", "c")[0] == 1


def test_a_batch_larger_than_the_socket_buffer_is_sent_whole(
        idle_container: bootstrap.Container) -> None:
    """A batch of several megabytes (events just below the bus's payload limit) cannot leave
    in one send: the rest waits for the socket to drain, and every event is stored byte for
    byte."""
    store = idle_container.store
    now = datetime(2026, 1, 1, tzinfo=UTC)
    blob = "x" * 900_000
    event = RevisionPublished(at=now, actor="user:owner", appended=True, revision=Revision(
        id="cd" * 32, created_at=now, operation="sync", parameters={"blob": blob}))
    stream = context_stream("team", "big")

    async def scenario() -> int:
        small = [store.append_async(context_stream("team", f"s{i}"), 0, [event])
                 for i in range(3)]
        positions = await asyncio.gather(store.append_async(stream, 0, [event] * 7), *small)
        await store.close_async()
        return positions[0]

    position = asyncio.run(scenario())
    recorded = store.read_stream(stream)
    assert len(recorded) == 7
    assert recorded[-1].position == position
    for one in recorded:
        assert isinstance(one.event, RevisionPublished)
        assert one.event.revision.parameters["blob"] == blob


def test_an_append_left_without_an_answer_fails_and_the_next_one_gets_through(
        idle_container: bootstrap.Container, database_url: str) -> None:
    """A server that stops answering (here: the event table held by another session) fails
    the waiting writers after the group's timeout instead of leaving them waiting for ever; once
    the server answers again, the next write commits on a fresh connection."""
    app = idle_container.contexts

    async def scenario() -> None:
        await app.execute_async("team", "a", create("a"))
        group = app.store._loop_group()
        group.timeout = 0.5
        with psycopg.connect(database_url) as blocker:
            blocker.execute("LOCK TABLE stored_events IN ACCESS EXCLUSIVE MODE")
            started = asyncio.get_running_loop().time()
            with pytest.raises(OperationalError):
                await asyncio.wait_for(app.execute_async("team", "b", create("b")), 5)
            assert asyncio.get_running_loop().time() - started < 3
            blocker.rollback()
        outcome = await asyncio.wait_for(app.execute_async("team", "c", create("c")), 5)
        assert outcome.position > 0
        await app.store.close_async()

    asyncio.run(scenario())
    assert ContextApplication(idle_container.store).load("team", "c")[0] == 1
