"""Requests whose client closed the connection before their answer (src/http/connections.py),
over a transport held in memory: their tasks are cancelled, so a job still waiting in the
handlers' thread pool never runs; an answer already complete is left to finish what follows it;
and an abandoned request is no error in the log."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import uvicorn
from uvicorn.server import ServerState

from context_service.http import connections
from tests.unit.test_connection_bounds import Transport

GET = b"GET /v1/contexts HTTP/1.1\r\nHost: x\r\n\r\n"
BOUND = 30.0  # how long a test waits for a thread before it calls it stuck


async def connected(app: Any, state: ServerState) -> tuple[connections.BoundedHttp, Transport]:
    config = uvicorn.Config(app, lifespan="off", log_config=None)
    protocol = connections.bounded(100)(config, state, {}, _loop=asyncio.get_running_loop())
    transport = Transport()
    protocol.connection_made(transport)
    return protocol, transport


async def ended(state: ServerState) -> None:
    """Until every request task of the server has ended (a task that never ends fails the
    test after a bound)."""
    if state.tasks:
        _, running = await asyncio.wait(set(state.tasks), timeout=BOUND)
        assert not running, "a request task did not end"


async def turns(count: int = 5) -> None:
    """Let the event loop run what is ready (a task's steps up to its next wait)."""
    for _ in range(count):
        await asyncio.sleep(0)


def test_a_job_waiting_for_a_handler_thread_is_dropped_when_its_client_goes(
        caplog: pytest.LogCaptureFixture) -> None:
    """The pool's one thread is busy; a request's job waits behind it and its client closes the
    connection: once the thread is free, the job never runs, and nothing is logged as an
    error."""
    pool = ThreadPoolExecutor(1)
    busy, ran = threading.Event(), []

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.get_running_loop().run_in_executor(pool, ran.append, scope["path"])
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    async def exchange() -> None:
        state = ServerState()
        protocol, transport = await connected(handler, state)
        pool.submit(busy.wait, BOUND)
        protocol.data_received(GET)
        await turns()  # the request's task hands its job to the pool
        protocol.connection_lost(None)
        await turns()
        busy.set()
        await asyncio.get_running_loop().run_in_executor(None, pool.shutdown)
        await ended(state)
        assert transport.written == b""

    with caplog.at_level(logging.DEBUG):
        asyncio.run(exchange())
    assert ran == []
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_a_request_whose_client_goes_is_cancelled_where_it_waits() -> None:
    """A request waiting on the event loop (a write's group commit, say) is cancelled when its
    client closes the connection: what it holds is let go on the way out."""
    let_go = []

    async def waiting(scope: Any, receive: Any, send: Any) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            let_go.append(scope["path"])

    async def exchange() -> None:
        state = ServerState()
        protocol, _ = await connected(waiting, state)
        protocol.data_received(GET)
        await turns()
        protocol.connection_lost(None)
        await ended(state)

    asyncio.run(exchange())
    assert let_go == ["/v1/contexts"]


def test_what_follows_a_complete_answer_is_not_cancelled_when_the_client_goes() -> None:
    """The answer was sent whole and the client closed the connection: the work the app does
    after its answer (a background task) still runs to its end."""
    finished = []

    async def answers_then_works(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})
        gone.set()
        await proceed.wait()
        finished.append(scope["path"])

    gone, proceed = asyncio.Event(), asyncio.Event()

    async def exchange() -> None:
        state = ServerState()
        protocol, transport = await connected(answers_then_works, state)
        protocol.data_received(GET)
        await gone.wait()
        protocol.connection_lost(None)
        proceed.set()
        await ended(state)
        assert transport.written.startswith(b"HTTP/1.1 200 ")

    asyncio.run(exchange())
    assert finished == ["/v1/contexts"]
