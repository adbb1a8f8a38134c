"""The process's stop signals: recorded before anything else, interrupting start-up once (and
read again between its steps), delivered to the HTTP server while it serves without uvicorn
ever replacing the handler, and only noted during the shutdown sequence."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

import pytest
import uvicorn

from context_service.http.shutdown import Drain, Server
from context_service.stop_signals import ShutdownRequested, StopSignals
from tests.e2e.server import free_port


@pytest.fixture
def signals() -> Iterator[StopSignals]:
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    stop = StopSignals()
    stop.install()
    yield stop
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def test_start_up_is_interrupted_once_and_a_swallowed_interruption_is_still_obeyed(
        signals: StopSignals) -> None:
    with contextlib.suppress(ShutdownRequested):  # a start-up step that catches everything
        signal.raise_signal(signal.SIGTERM)
    assert signals.signal == "SIGTERM"
    signal.raise_signal(signal.SIGINT)  # no second interruption inside the first one's unwinding
    assert signals.signal == "SIGTERM"
    with pytest.raises(ShutdownRequested):
        signals.check()  # the next step boundary


def test_a_signal_before_serving_is_delivered_when_serving_starts(signals: StopSignals) -> None:
    with pytest.raises(ShutdownRequested):
        signal.raise_signal(signal.SIGTERM)
    delivered: list[int] = []
    with signals.delivering_to(delivered.append):
        signal.raise_signal(signal.SIGINT)  # delivered, never raised
    assert delivered == [signal.SIGTERM, signal.SIGINT]


def test_during_the_shutdown_a_signal_is_only_noted(signals: StopSignals) -> None:
    with signals.stopping():
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)
    assert signals.signal == "SIGTERM"


async def _app(scope: dict[str, object], receive: object, send: object) -> None:
    return None


def test_uvicorn_never_replaces_the_handler_and_a_signal_stops_it(signals: StopSignals) -> None:
    drain = Drain(_app)  # type: ignore[arg-type]
    config = uvicorn.Config(drain, host="127.0.0.1", port=free_port(), lifespan="off",
                            log_level="warning")
    server = Server(config, drain, 1.0)
    seen: list[object] = []

    async def signal_while_serving() -> None:
        while not server.started:
            await asyncio.sleep(0.01)
        seen.append(signal.getsignal(signal.SIGTERM))
        signal.raise_signal(signal.SIGTERM)

    async def serve() -> None:
        task = asyncio.ensure_future(signal_while_serving())
        await server.serve()
        await task

    with signals.delivering_to(lambda sig: server.handle_exit(sig, None)):
        asyncio.run(serve())
    assert seen == [signals._handle]
    assert server.should_exit and signals.signal == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) == signals._handle  # nor restores another one
