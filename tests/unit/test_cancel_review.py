"""Requests cancelled as their client goes (src/http/connections.py), beside the other reasons a
request task is cancelled: the drain abandoning it at shutdown, the server cancelling what still
runs after the drain. Only the first is the client's doing and counted ``499``; an abandoned
request's end logs no error even when an earlier cancellation of it was already handled."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from uvicorn.server import ServerState

from context_service.http import common, metrics
from context_service.http.shutdown import Drain
from tests.unit.test_connections_abandoned import GET, connected, ended, turns


def counted(requests: metrics.RequestMetrics, status: int) -> float:
    """Requests counted with ``status`` (any method and route)."""
    return sum(sample.value for family in requests.registry.collect()
               if family.name == "cs_http_requests" for sample in family.samples
               if sample.name == "cs_http_requests_total"
               and sample.labels["status"] == str(status))


async def waits_for_ever(scope: Any, receive: Any, send: Any) -> None:
    await asyncio.Event().wait()


async def waiting(requests: metrics.RequestMetrics) -> tuple[Any, ServerState]:
    """A connection whose GET, counted by ``requests``, is under way and never answers."""
    state = ServerState()
    protocol, _ = await connected(metrics.middleware(requests)(waits_for_ever), state)
    protocol.data_received(GET)
    await turns()
    return protocol, state


def test_a_request_the_drain_answers_503_is_not_counted_as_the_clients_doing() -> None:
    """The grace is over: the drain answers a request that has not begun its answer ``503``
    and cancels its handler. The client is still there and got a 503: no ``499``."""
    requests = metrics.RequestMetrics()

    async def scenario() -> None:
        drain = Drain(metrics.middleware(requests)(waits_for_ever))
        sent: list[Any] = []

        async def send(message: Any) -> None:
            sent.append(message)

        async def receive() -> Any:
            return {"type": "http.request", "body": b"", "more_body": False}

        scope = {"type": "http", "method": "GET", "path": "/x", "headers": []}
        task = asyncio.create_task(drain(scope, receive, send))
        await turns()
        assert await drain.expire() == 1
        await asyncio.wait_for(task, 30.0)
        assert sent[0]["status"] == 503

    asyncio.run(scenario())
    assert counted(requests, 499) == 0


def test_a_request_the_server_cancels_is_not_counted_as_the_clients_doing() -> None:
    """The server cancels a request task that outlived the drain (uvicorn's graceful timeout):
    its client did not leave, so it is no ``499``."""
    requests = metrics.RequestMetrics()

    async def scenario() -> None:
        _, state = await waiting(requests)
        for task in state.tasks:
            task.cancel()
        await asyncio.wait(set(state.tasks), timeout=30.0)

    asyncio.run(scenario())
    assert counted(requests, 499) == 0


def test_a_request_whose_client_goes_before_its_answer_is_counted_499() -> None:
    requests = metrics.RequestMetrics()

    async def scenario() -> None:
        protocol, state = await waiting(requests)
        protocol.connection_lost(None)
        await ended(state)

    asyncio.run(scenario())
    assert counted(requests, 499) == 1


def test_a_client_gone_after_an_earlier_cancellation_was_handled_logs_no_error(
        caplog: pytest.LogCaptureFixture) -> None:
    """The drain cancels a stream under way and handles that cancellation itself (it then sends
    the stream's error line, which waits for a slow reader); the client goes meanwhile. The
    request ends quietly: no ``Exception in ASGI application``."""
    handled = asyncio.Event()

    async def handles_a_cancel_then_waits(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            handled.set()  # as the drain does for a stream it cut: it goes on to end it
        await asyncio.Event().wait()  # the ending line, behind what the reader has not taken

    async def scenario() -> None:
        state = ServerState()
        protocol, _ = await connected(handles_a_cancel_then_waits, state)
        protocol.data_received(GET)
        await turns()
        for task in state.tasks:
            task.cancel()
        await handled.wait()
        protocol.connection_lost(None)
        await ended(state)

    with caplog.at_level(logging.DEBUG):
        asyncio.run(scenario())
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_stream_its_client_cuts_short_keeps_the_status_it_began_with() -> None:
    """The answer began (``200`` and a first line) and the client went before its end: the
    request is counted with its status, not as ``499``."""
    requests = metrics.RequestMetrics()

    async def streams(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}\n", "more_body": True})
        await asyncio.Event().wait()

    async def scenario() -> None:
        state = ServerState()
        protocol, transport = await connected(metrics.middleware(requests)(streams), state)
        protocol.data_received(GET)
        await turns()
        assert transport.written.startswith(b"HTTP/1.1 200 ")
        protocol.connection_lost(None)
        await ended(state)

    asyncio.run(scenario())
    assert (counted(requests, 200), counted(requests, 499)) == (1, 0)


def test_a_pipelined_request_is_cancelled_with_its_connection_not_before() -> None:
    """Two requests pipelined on one connection: the first is answered whole and the second
    runs; only when the client goes is the second cancelled, never the first's answer."""
    second_started, let_go = asyncio.Event(), []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["path"] == "/first":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        second_started.set()
        try:
            await asyncio.Event().wait()
        finally:
            let_go.append(scope["path"])

    async def scenario() -> None:
        state = ServerState()
        protocol, transport = await connected(app, state)
        protocol.data_received(b"GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
                               b"GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
        await second_started.wait()
        assert transport.written.count(b"HTTP/1.1 200 ") == 1 and let_go == []
        protocol.connection_lost(None)
        await ended(state)

    asyncio.run(scenario())
    assert let_go == ["/second"]


async def gone_while_running(job: Any, running: threading.Event) -> tuple[Drain, ServerState]:
    """A request whose handler runs ``job`` on a handler thread; its client goes once the job
    runs. The drain and the server's state, for what follows."""

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        await common.in_thread(job)

    state = ServerState()
    drain = Drain(handler)
    protocol, _ = await connected(drain, state)
    protocol.data_received(GET)
    assert await asyncio.get_running_loop().run_in_executor(None, running.wait, 30.0)
    protocol.connection_lost(None)
    await turns()
    return drain, state


def test_a_request_whose_job_runs_stays_in_flight_until_the_job_ends() -> None:
    running, release, finished = threading.Event(), threading.Event(), []

    def job() -> None:
        running.set()
        release.wait(30.0)
        finished.append(True)

    async def scenario() -> None:
        drain, state = await gone_while_running(job, running)
        in_flight = drain.in_flight
        release.set()
        await ended(state)
        assert in_flight == 1  # shutdown would have waited for the job
        assert finished == [True] and drain.in_flight == 0

    asyncio.run(scenario())


def test_the_drains_cancel_still_ends_the_wait_for_a_running_job() -> None:
    """The client went while the job ran; the drain's cancel at the grace's end still ends it."""
    running, release = threading.Event(), threading.Event()

    def job() -> None:
        running.set()
        release.wait(30.0)

    async def scenario() -> None:
        drain, state = await gone_while_running(job, running)
        assert drain.in_flight == 1
        assert await drain.expire() == 1
        await ended(state)
        assert drain.in_flight == 0
        release.set()

    asyncio.run(scenario())
