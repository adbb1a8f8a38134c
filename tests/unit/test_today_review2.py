"""What a request the drain answered at shutdown is counted as, and the context lock of a read
of a store that may not be written."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

import pytest

from context_service.contextctl.local import LocalStore
from context_service.http import connections
from context_service.http.metrics import RequestMetrics, middleware
from context_service.http.shutdown import Drain
from tests.support.local_store import write
from tests.unit.test_drain import SCOPE, Sent, _counted, app_answering, receive


async def served(drain: Drain, sent: Sent) -> None:
    """``drain`` called as uvicorn calls it: an app that returns without having started a
    response gets uvicorn's own 500 (nothing sent after that reaches the client)."""
    await drain(SCOPE, receive, sent)
    if not sent.messages:
        await sent({"type": "http.response.start", "status": 500, "headers": []})
        await sent({"type": "http.response.body", "body": b"Internal Server Error"})


def test_a_handler_ending_as_the_grace_ends_leaves_the_client_the_drains_503() -> None:
    """The grace ends in the same turn of the loop as a handler's answer is ready (its thread
    finished): the drain has answered the request, its handler's answer goes nowhere. The
    request's task must not end before the drain's 503 is sent (the server would answer 500
    first), and the request is counted with that 503, not with the answer dropped."""

    async def scenario() -> None:
        requests = RequestMetrics()
        ready = asyncio.Event()
        drain = Drain(middleware(requests)(app_answering(ready, 201)))
        sent = Sent()
        request = asyncio.create_task(served(drain, sent))
        await asyncio.sleep(0.01)
        ready.set()  # the handler's answer is ready: it runs on the loop's next turn
        assert await drain.expire() == 1
        await asyncio.wait_for(request, 1)
        assert sent.status == 503
        assert _counted(requests) == {"503": 1.0}

    asyncio.run(scenario())


def test_a_request_whose_client_went_before_the_drains_503_is_counted_499() -> None:
    """A client that closed its connection before the grace ended, on a request whose handler
    thread was still waited for: the drain's 503 at the grace's end reached no one, the request
    is the client's 499 (as without the drain), not a 503."""

    async def handler(scope: Any, receive: Any, send: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:  # the client's: its thread is waited for (in_thread)
            await asyncio.Event().wait()

    async def scenario() -> None:
        requests = RequestMetrics()
        drain = Drain(middleware(requests)(handler))
        sent = Sent()
        request = asyncio.create_task(drain(SCOPE, receive, sent))
        await asyncio.sleep(0.01)
        connections._ABANDONED[request] = request.cancelling()  # as the connection's loss does
        request.cancel()
        await asyncio.sleep(0.01)
        assert drain.in_flight == 1
        assert await drain.expire() == 1
        await asyncio.wait_for(request, 1)
        assert _counted(requests) == {"499": 1.0}

    asyncio.run(scenario())


def test_a_task_the_drain_answered_is_counted_by_its_own_status_in_its_next_request() -> None:
    """A task that runs requests one after another (an in-process client's): once its request
    is over, the drain's 503 of it says nothing of the next one."""

    async def scenario() -> None:
        first = Drain(middleware(RequestMetrics())(app_answering(asyncio.Event())))
        expiring = asyncio.get_running_loop().call_later(
            0.01, lambda: asyncio.ensure_future(first.expire()))
        await first(SCOPE, receive, Sent())  # in this task: answered 503, its handler dropped
        expiring.cancel()
        requests = RequestMetrics()
        await middleware(requests)(app_answering(None, 201))(SCOPE, receive, Sent())
        assert _counted(requests) == {"201": 1.0}

    asyncio.run(scenario())


def read_only(monkeypatch: pytest.MonkeyPatch, under: Path) -> None:
    """The file system under ``under`` mounted read-only from now: making a file there fails
    as it does on such a mount (whoever the tests run as: root may write any directory)."""
    opened = os.open

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if flags & os.O_CREAT and Path(path).is_relative_to(under):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return opened(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_)


def test_a_context_made_before_its_lock_file_can_be_read_from_a_read_only_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A context whose lock file was never made (created before reads took the lock, and never
    changed since) on a store mounted read-only: its status, history and records were read
    before reads took the lock; a reader cannot make the lock file there, and no change can run
    beside it (none can write), so it reads without it rather than fail."""
    store = LocalStore(tmp_path / "home")
    context = store.create("older", "memory")
    write(context, "memory/MEMORY.md", b"- a\n")
    revision = context.content().revision
    (context.root / ".context" / "lock").unlink()  # as a context made before it existed
    read_only(monkeypatch, tmp_path)

    opened = store.open("older")
    assert opened.content().revision == revision
    assert opened.history() == []
    assert [r["revision"] for r in opened.records() or []] == [revision]
    assert not (context.root / ".context" / "lock").exists()
