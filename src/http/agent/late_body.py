"""Agent routes read their body only after the bearer pipeline (agent-context-api.md §1.5): the
handler runs on the thread pool with a ``PendingBody`` and reads it when it decodes, so an unknown
or refused credential is answered before one body byte is buffered.

A request presenting a valid credential has its body received on the event loop before the
handler takes a request thread: a caller sending its body slowly then holds a coroutine, not one
of the threads every route shares (forty slow bodies held them all for ten seconds).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, get_type_hints

from litestar import Request, Response

from context_service.http.agent.errors import ApiError
from context_service.http.agent.pipeline import presents_credential
from context_service.http.common import in_thread

R = TypeVar("R", bound=Response[Any])
# How long a handler thread waits for the body once the pipeline passed: a sender slower than
# this would otherwise hold one of the request threads for as long as it likes.
BODY_WAIT_SECONDS = 10.0


class PendingBody:
    """The request body, read from the event loop the first time a handler thread asks."""

    def __init__(self, request: Request[Any, Any, Any], loop: asyncio.AbstractEventLoop) -> None:
        self._request = request
        self._loop = loop
        self._body: bytes | None = None
        self._late = False

    async def receive(self) -> None:
        """Receive the body on the event loop, for up to the body wait; one that does not
        arrive in time is refused when the handler reads it (after its pipeline)."""
        try:
            self._body = await asyncio.wait_for(self._request.body(), BODY_WAIT_SECONDS)
        except TimeoutError:
            self._late = True

    def read(self) -> bytes:
        if self._late:
            raise _late()
        if self._body is None:
            future = asyncio.run_coroutine_threadsafe(self._request.body(), self._loop)
            try:
                self._body = future.result(BODY_WAIT_SECONDS)
            except concurrent.futures.TimeoutError:
                future.cancel()
                raise _late() from None
        return self._body


def _late() -> ApiError:
    return ApiError(400, "INVALID_REQUEST",
                    f"request body did not arrive within {BODY_WAIT_SECONDS:g} seconds")


def body_after_pipeline(
        fn: Callable[..., R]) -> Callable[..., Awaitable[R]]:
    """Like ``common.threaded``, except that the body is read when the handler decodes it
    (after ``authenticate``), not before the handler starts; a request presenting a valid
    credential has it received on the event loop first, so no request thread waits for it.
    ``fn`` takes the request, the pending body, then its typed path parameters (``FromPath``),
    passed on by name."""
    hints = get_type_hints(fn, include_extras=True)
    path = [p for name, p in inspect.signature(fn).parameters.items()
            if name not in ("request", "body")]

    async def handler(request: Request[Any, Any, Any], **params: Any) -> R:
        body = PendingBody(request, asyncio.get_running_loop())
        if "authorization" in request.headers and await in_thread(presents_credential, request):
            await body.receive()
        return await in_thread(fn, request, body, **params)

    for attribute in ("__module__", "__name__", "__qualname__", "__doc__"):
        setattr(handler, attribute, getattr(fn, attribute))
    # what Litestar reads: the request and the path parameters, as resolved objects (the
    # route's module does not know ``R``), and the answer ``fn`` declares as the route's own
    request = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    handler.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [request, *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in path)])
    handler.__annotations__ = {"request": Request[Any, Any, Any],
                               **{p.name: hints[p.name] for p in path},
                               "return": hints.get("return", Response[Any])}
    return handler
