"""Helpers every route shares: services, caller, JSON answers, read-your-writes waits."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

import msgspec
from litestar import Request, Response

from context_service.domain.events import Subject
from context_service.http import connections
from context_service.http.errors import HttpError
from context_service.http.ports import Services
from context_service.http.subject import request_subject
from context_service.projections.reads import Consistency

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")  # what an answer's body is documented as
POSITION_HEADER = "X-Context-Position"
_enc = msgspec.json.Encoder()

CATALOG = ("context_catalog",)
# as many as anyio would run: handlers block on PostgreSQL, Kubernetes and view waits
_HANDLERS = ThreadPoolExecutor(40, thread_name_prefix="http")


def services(request: Request[Any, Any, Any]) -> Services:
    found: Services = request.app.state.services
    return found


def caller(request: Request[Any, Any, Any]) -> Subject:
    found = services(request)
    return request_subject(request.headers, found.require_subject, found.gateway_secret)


def json(body: Any, status: int = 200, position: int = 0) -> Response[Any]:
    headers = {POSITION_HEADER: str(position)} if position else None
    return Response(_enc.encode(body), status_code=status, media_type="application/json",
                    headers=headers)


def no_content(position: int = 0) -> Response[Any]:
    headers = {POSITION_HEADER: str(position)} if position else None
    return Response(b"", status_code=204, headers=headers)


def wait_for_views(request: Request[Any, Any, Any], views: Sequence[str],
                   head: int | None = None) -> None:
    """Wait until ``views`` reach the log head as of now (or ``head``, read by the caller just
    before); 503 past the read wait."""
    found = services(request)
    views_caught_up(found.consistency, views, found.read_wait_seconds, head)


def views_caught_up(consistency: Consistency, views: Sequence[str], wait_seconds: float,
                    head: int | None = None) -> None:
    """``wait_for_views`` without a request (for ports the composition root builds)."""
    if not consistency.wait(views, wait_seconds, head):
        raise HttpError(503, "unavailable",
                        "the read model has not caught up with the event log; retry shortly")


def from_browser(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """The request carries a header only browsers send: ``Origin`` (any value) or any
    ``Sec-Fetch-*`` (ASGI header names; compared case-insensitively)."""
    for name, _ in headers:
        lowered = name.lower()
        if lowered == b"origin" or lowered.startswith(b"sec-fetch-"):
            return True
    return False


async def raw_body(request: Request[Any, Any, Any]) -> bytes:
    return await request.body()


def threaded(fn: Callable[P, Response[R]]) -> Callable[P, Awaitable[Response[R]]]:
    """Run a blocking handler in a worker thread.

    Litestar's own ``sync_to_thread`` breaks when several sync handlers share one path (the
    handler of another method gets an un-awaited coroutine), so handlers are async wrappers.
    They hand over to a plain thread pool: anyio's ``to_thread`` costs several times more per
    call (task lookups, capacity limiter, cancel scopes), which shows at thousands of writes a
    second.
    """

    @functools.wraps(fn)
    async def handler(*args: P.args, **kwargs: P.kwargs) -> Response[R]:
        return await in_thread(fn, *args, **kwargs)

    return handler


async def in_thread(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking call on the handlers' thread pool, with the caller's context. Cancelled as
    its client went, a job not started yet is dropped; one already running is waited for, so
    the request stays in flight (shutdown waits for it) while its thread works; a further
    cancel (the drain's at the grace's end) ends that wait."""
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    job = _HANDLERS.submit(call)
    try:
        return await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        if not job.cancel() and connections.abandoned_by_client(asyncio.current_task()):
            with contextlib.suppress(Exception):  # its answer goes nowhere
                await asyncio.wrap_future(job)
        raise
