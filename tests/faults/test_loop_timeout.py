"""An append on the event loop's group commit that gets no answer within its timeout fails its
writer, and the server must not commit it afterwards (real PostgreSQL): the writer was told the
write failed. The append waits for the event table's lock, held by another connection, past a
short timeout; once the lock goes, the write that timed out is not in the log, and the next
write commits on a new connection."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.loopcommit import LoopGroupCommit
from tests.faults.test_crash_points import create, logged, no_longer_waiting
from tests.support.event_table import waiting_for_the_lock

TIMEOUT = 0.5  # seconds: the append waits for the lock far longer


def loop_group(container: bootstrap.Container) -> LoopGroupCommit:
    [group] = [g for g in container.store.groups() if isinstance(g, LoopGroupCommit)]
    return group


def test_an_append_that_timed_out_is_never_committed(
        idle_container: bootstrap.Container, database_url: str) -> None:
    app = idle_container.contexts

    async def scenario() -> None:
        await app.execute_async("team", "before", create("before"))  # the loop's connection
        loop_group(idle_container).timeout = TIMEOUT
        with psycopg.connect(database_url) as blocker:
            blocker.execute("LOCK TABLE stored_events IN ACCESS EXCLUSIVE MODE")
            with pytest.raises(Exception, match="no answer to an append"):
                await app.execute_async("team", "timed-out", create("timed-out"))
            await no_longer_waiting(database_url)
            blocker.rollback()  # the lock goes: a statement still running commits now
        assert waiting_for_the_lock(database_url) == 0
        await app.execute_async("team", "after", create("after"))
        await idle_container.store.close_async()

    asyncio.run(scenario())
    assert logged(idle_container, "before") == 1
    assert logged(idle_container, "timed-out") == 0
    assert logged(idle_container, "after") == 1
