"""Crash points between two steps of a write that a drained request leaves behind (real
PostgreSQL): a request the drain answered ``503 ... retry against another instance`` and
abandoned must write nothing afterwards, whether its append was queued on the event loop's group
commit, in flight there, or not yet made by its handler thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import psycopg
import pytest

from context_service import bootstrap
from context_service.domain.context.commands import CreateContext
from context_service.domain.events import Subject
from context_service.domain.stream import context_stream
from context_service.http.common import in_thread
from context_service.http.shutdown import Drain
from tests.support.event_table import waiting_for_the_lock

OWNER = Subject("user", "owner")


def create(name: str) -> CreateContext:
    return CreateContext(actor=OWNER, name=name, namespace="team", type="memory", backend="pvc",
                         size="1Gi", access_mode="ReadWriteOnce", storage_class="")


@pytest.fixture
def appends_blocked(database_url: str) -> Iterator[psycopg.Connection[object]]:
    """A transaction holding the event table's lock: appends (and reads of the log) wait for it
    until the test rolls it back."""
    with psycopg.connect(database_url) as blocker:
        blocker.execute("LOCK TABLE stored_events IN ACCESS EXCLUSIVE MODE")
        yield blocker
        blocker.rollback()


async def no_longer_waiting(database_url: str, bound: float = 3.0) -> None:
    """Until no append waits for the lock any more (a cancelled one stops waiting once the
    server took the cancel request), or ``bound`` seconds: then the test goes on and its
    assertions tell."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    while waiting_for_the_lock(database_url) and loop.time() < deadline:
        await asyncio.sleep(0.01)


def logged(container: bootstrap.Container, name: str) -> int:
    return len(container.store.load(context_stream("team", name)))


def test_appends_abandoned_on_the_event_loop_are_never_committed(
        idle_container: bootstrap.Container, database_url: str,
        appends_blocked: psycopg.Connection[object]) -> None:
    """One create in flight (its transaction waits for the lock), one queued behind it; the
    drain abandons both (their tasks are cancelled); neither is in the log once the lock goes,
    and a write after them commits as usual."""
    app = idle_container.contexts

    async def scenario() -> None:
        first = asyncio.create_task(app.execute_async("team", "in-flight", create("in-flight")))
        while waiting_for_the_lock(database_url) < 1:
            await asyncio.sleep(0.01)
        queued = asyncio.create_task(app.execute_async("team", "queued", create("queued")))
        await asyncio.sleep(0)  # the queued write reaches the group commit's queue
        first.cancel()
        queued.cancel()
        await asyncio.gather(first, queued, return_exceptions=True)
        await no_longer_waiting(database_url)
        appends_blocked.rollback()  # the lock goes: what is still sent or running commits now
        await app.execute_async("team", "after", create("after"))
        await idle_container.store.close_async()

    asyncio.run(scenario())
    assert (logged(idle_container, "in-flight"), logged(idle_container, "queued")) == (0, 0)
    assert logged(idle_container, "after") == 1


def test_a_handler_thread_abandoned_by_the_drain_writes_nothing(
        idle_container: bootstrap.Container) -> None:
    """A blocking handler still deciding when the grace ends: the drain answers it 503 and
    abandons it, but its thread runs on; the append it makes then is refused."""
    app = idle_container.contexts
    deciding = threading.Event()
    decided = threading.Event()
    outcome: list[BaseException | None] = []

    def handler() -> None:
        deciding.set()
        decided.wait(30)
        try:
            app.execute("team", "late", create("late"))
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    async def asgi(scope: object, receive: object, send: object) -> None:
        await in_thread(handler)

    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def scenario() -> None:
        drain = Drain(asgi)  # type: ignore[arg-type]
        scope = {"type": "http", "path": "/v1/contexts", "method": "POST", "headers": []}
        request = asyncio.create_task(drain(scope, None, send))  # type: ignore[arg-type]
        while not deciding.is_set():
            await asyncio.sleep(0.01)
        assert await drain.expire() == 1
        await asyncio.gather(request, return_exceptions=True)

    asyncio.run(scenario())
    assert [m.get("status") for m in sent if m["type"] == "http.response.start"] == [503]
    decided.set()
    while not outcome:
        decided.wait(0.01)
    assert outcome[0] is not None  # refused, not committed
    assert logged(idle_container, "late") == 0
