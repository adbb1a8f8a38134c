"""The HTTP drain at the ASGI level: requests pass through untouched until the grace is over;
then every request whose response has not started is answered 503 and its handler abandoned,
a response already under way is left to finish, and a later request is answered 503 at once."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from context_service.http.shutdown import Drain

SCOPE: dict[str, Any] = {"type": "http", "method": "GET", "path": "/x", "headers": []}


class Sent:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def __call__(self, message: Any) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"])

    @property
    def body(self) -> Any:
        return json.loads(b"".join(m.get("body", b"") for m in self.messages[1:]))


async def receive() -> Any:
    return {"type": "http.request", "body": b"", "more_body": False}


def app_answering(after: asyncio.Event | None, status: int = 200,
                  started: asyncio.Event | None = None) -> Any:
    """An app that waits for ``after`` (if any) before answering ``status``."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if started is not None:
            await send({"type": "http.response.start", "status": status, "headers": []})
            started.set()
        if after is not None:
            await after.wait()
        if started is None:
            await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b'{"ok":true}'})

    return app


def test_requests_pass_through_until_the_grace_is_over() -> None:
    async def scenario() -> None:
        drain = Drain(app_answering(None, 201))
        sent = Sent()
        await drain(SCOPE, receive, sent)
        assert (sent.status, sent.body, drain.in_flight) == (201, {"ok": True}, 0)

    asyncio.run(scenario())


def test_an_unanswered_request_gets_503_and_its_handler_is_abandoned() -> None:
    async def scenario() -> None:
        never = asyncio.Event()
        drain = Drain(app_answering(never))
        sent = Sent()
        request = asyncio.create_task(drain(SCOPE, receive, sent))
        await asyncio.sleep(0.01)
        assert drain.in_flight == 1
        assert await drain.expire() == 1
        await asyncio.wait_for(request, 1)  # cancelled handler, request ends cleanly
        assert sent.status == 503
        assert sent.body == {"error": "unavailable",
                             "message": "the service is shutting down; retry against another "
                                        "instance"}
        assert (drain.in_flight, drain.answered, len(sent.messages)) == (0, 1, 2)

    asyncio.run(scenario())


def test_a_response_under_way_is_left_to_finish() -> None:
    async def scenario() -> None:
        release, started = asyncio.Event(), asyncio.Event()
        drain = Drain(app_answering(release, 200, started=started))
        sent = Sent()
        request = asyncio.create_task(drain(SCOPE, receive, sent))
        await started.wait()
        assert await drain.expire() == 0
        release.set()
        await asyncio.wait_for(request, 1)
        assert (sent.status, sent.body) == (200, {"ok": True})

    asyncio.run(scenario())


def test_a_request_after_the_grace_is_answered_503_at_once() -> None:
    async def scenario() -> None:
        drain = Drain(app_answering(None))
        await drain.expire()
        sent = Sent()
        await drain(SCOPE, receive, sent)
        assert sent.status == 503 and sent.body["error"] == "unavailable"

    asyncio.run(scenario())


def test_lifespan_and_other_scopes_are_not_drained() -> None:
    async def scenario() -> None:
        seen: list[str] = []

        async def app(scope: Any, receive: Any, send: Any) -> None:
            seen.append(scope["type"])

        drain = Drain(app)
        await drain.expire()
        await drain({"type": "lifespan"}, receive, Sent())
        assert seen == ["lifespan"]

    asyncio.run(scenario())


def _counted(requests: Any) -> dict[str, float]:
    """The request counter's samples by status."""
    return {sample.labels["status"]: sample.value
            for metric in requests.registry.collect() if metric.name == "cs_http_requests"
            for sample in metric.samples if sample.name == "cs_http_requests_total"}


def test_the_drains_503_is_counted_503_not_500() -> None:
    """The request counter sits inside the drain: a request the drain answers 503 at the
    grace's end was counted as a service failure (500), and one whose handler then answered
    anyway was counted with the answer its client never got."""
    from context_service.http.metrics import RequestMetrics, middleware

    async def scenario() -> None:
        requests = RequestMetrics()
        never = asyncio.Event()
        drain = Drain(middleware(requests)(app_answering(never)))
        sent = Sent()
        request = asyncio.create_task(drain(SCOPE, receive, sent))
        await asyncio.sleep(0.01)
        assert await drain.expire() == 1
        await asyncio.wait_for(request, 1)
        assert sent.status == 503
        assert _counted(requests) == {"503": 1.0}

    asyncio.run(scenario())


def test_an_answer_the_drain_dropped_is_counted_as_the_503_sent() -> None:
    """A handler that answers after the drain answered 503 (a threaded one finishing while its
    task is being cancelled) is counted with what its client got."""
    from context_service.http.metrics import RequestMetrics, middleware

    async def late(scope: Any, receive: Any, send: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # answers anyway, as a finishing thread's result would
            await send({"type": "http.response.start", "status": 201, "headers": []})
            await send({"type": "http.response.body", "body": b'{"ok":true}'})

    async def scenario() -> None:
        requests = RequestMetrics()
        drain = Drain(middleware(requests)(late))
        sent = Sent()
        request = asyncio.create_task(drain(SCOPE, receive, sent))
        await asyncio.sleep(0.01)
        assert await drain.expire() == 1
        await asyncio.wait_for(request, 1)
        assert (sent.status, len(sent.messages)) == (503, 2)
        assert _counted(requests) == {"503": 1.0}

    asyncio.run(scenario())
