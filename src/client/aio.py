"""The asynchronous client: the synchronous one's routes and rules on ``httpx.AsyncClient``."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx
import msgspec

from context_service.client import routes
from context_service.client.errors import ApiError, error_of, interrupted, unreachable
from context_service.client.retry import Retry
from context_service.client.sync import UNSENT, PackLines
from context_service.contract import agent as c

T = TypeVar("T")


class AsyncClient:
    """``AsyncClient(url, token)``; or ``AsyncClient(token=..., http=an httpx.AsyncClient)``."""

    def __init__(self, url: str = "", token: str = "", *, timeout: float = 60.0,
                 retry: Retry | None = None, http: httpx.AsyncClient | None = None,
                 headers: Mapping[str, str] | None = None,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.headers = routes.headers(token, headers)
        self.http = http if http is not None else httpx.AsyncClient(base_url=url,
                                                                    timeout=timeout)
        self._owned = http is None
        self.retry = retry or Retry()
        self.sleep = sleep

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: type[BaseException] | BaseException | TracebackType | None
                        ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._owned:
            await self.http.aclose()

    async def _send(self, path: str, body: bytes, stream: bool = False) -> httpx.Response:
        read, attempt = path in routes.READS, -1
        timeout = routes.waited(self.http.timeout, routes.patience(path, body))
        while True:
            attempt += 1
            try:
                request = self.http.build_request("POST", path, content=body,
                                                  headers=self.headers, timeout=timeout)
                response = await self.http.send(request, stream=stream)
            except httpx.TransportError as exc:
                wait = self.retry.unsent(attempt) if isinstance(exc, UNSENT) else None
                if wait is None:
                    raise unreachable(exc) from exc
                await self.sleep(wait)
                continue
            if response.is_success:
                return response
            error = await self._refusal(response)
            wait = self.retry.wait(response.status_code, attempt, error.retry_after, read)
            if wait is None:
                raise error
            await self.sleep(wait)

    @staticmethod
    async def _refusal(response: httpx.Response) -> ApiError:
        """The synchronous client's ``_refusal``: the answer closed, even when cancelled."""
        try:
            body = await response.aread()
        except httpx.TransportError:
            body = b""
        finally:
            await response.aclose()
        return error_of(response, body)

    async def call(self, path: str, body: msgspec.Struct | dict[str, Any]) -> bytes:
        """The raw answer of an agent route (the service's exact bytes)."""
        return (await self._send(path, routes.encode(body))).content

    async def exchange(self, path: str, body: msgspec.Struct | dict[str, Any],
                       answer: type[T]) -> tuple[T, bytes]:
        """The answer of an agent route decoded as ``answer``, and the service's exact bytes
        (msgspec's error when it does not decode, for a caller that words it its own way)."""
        raw = await self.call(path, body)
        return msgspec.json.decode(raw, type=answer), raw

    async def _typed(self, path: str, body: msgspec.Struct | dict[str, Any],
                     answer: type[T]) -> T:
        response = await self._send(path, routes.encode(body))
        return routes.decoded(response.content, answer, response.status_code)

    async def pack(self, request: c.PackRequest | str) -> c.ContextPack:
        return await self._typed(routes.PACKS, routes.pack_request(request), c.ContextPack)

    def stream_pack(self, request: c.PackRequest | str) -> AsyncPackStream:
        """The pack as it streams: iterate (``async for``) over its items; ``header`` and
        ``footer`` are set as their lines arrive. The request is sent when the iteration starts.
        Close it (``aclose``, or use it as an async context manager) if you stop early."""
        body = routes.encode(routes.pack_request(request))
        return AsyncPackStream(lambda: self._send(routes.STREAM, body, stream=True))

    async def replay(self, replay_id: str, mode: Literal["verify", "recompute"],
                     task: str | None = None) -> c.Replay:
        body = c.ReplayRequest(mode=mode, task=task)
        return await self._typed(routes.replay(replay_id), body, c.Replay)  # type: ignore[arg-type]

    async def list_context_sets(self, request: c.ListContextSetsRequest | None = None
                                ) -> c.ContextSetList:
        return await self._typed(routes.SETS_LIST, request or c.ListContextSetsRequest(),
                                 c.ContextSetList)

    async def get_context_set(self, context_set_id: str | None = None) -> c.AgentContextSet:
        body = c.GetContextSetRequest(context_set_id=context_set_id)
        return await self._typed(routes.SETS_GET, body, c.AgentContextSet)

    async def lookup_definitions(self, request: c.LookupDefinitionsRequest
                                 ) -> c.DefinitionMatches:
        return await self._typed(routes.LOOKUP, request, c.DefinitionMatches)

    async def match_verified_answers(self, request: c.MatchVerifiedAnswersRequest
                                     ) -> c.AnswerMatches:
        return await self._typed(routes.MATCH, request, c.AnswerMatches)

    async def list_fields(self, collection_id: str) -> c.FieldListing:
        return await self._typed(routes.FIELDS_LIST,
                                 c.ListFieldsRequest(collection_id=collection_id),
                                 c.FieldListing)

    async def query_fields(self, request: c.QueryFieldsRequest) -> c.FieldAnswer:
        return await self._typed(routes.FIELDS_QUERY, request, c.FieldAnswer)

    async def run_query_template(self, request: c.RunQueryTemplateRequest) -> c.TemplateRows:
        return await self._typed(routes.RUN, request, c.TemplateRows)


class AsyncPackStream(PackLines):
    """The items of a streamed pack, in pack order, decoded as their lines arrive: the
    asynchronous ``PackStream``."""

    def __init__(self, start: Callable[[], Awaitable[httpx.Response]]) -> None:
        super().__init__()
        self._start: Callable[[], Awaitable[httpx.Response]] | None = start
        self._response: httpx.Response | None = None
        self._chunks: AsyncIterator[bytes] | None = None
        self._split = routes.Lines()
        self._ready: deque[bytes] = deque()

    def __aiter__(self) -> AsyncPackStream:
        return self

    async def __anext__(self) -> c.PackItem:
        try:
            if self._chunks is None:
                if self._start is None:  # closed, or over: whole only if the footer came
                    self.ended()
                    raise StopAsyncIteration
                start, self._start = self._start, None
                self._response = await start()
                self._chunks = self._response.aiter_bytes()
            while True:
                if not self._ready and not await self._more():
                    self.ended()
                    raise StopAsyncIteration
                item = self.read(self._ready.popleft())
                if item is not None:
                    return item
        except httpx.TransportError as exc:  # the connection broke off mid-stream
            await self.aclose()
            raise interrupted(exc) from exc
        except BaseException:
            await self.aclose()
            raise

    async def _more(self) -> bool:
        """The lines of the next chunk (the last, unended line at the end); False when the
        stream is over."""
        assert self._chunks is not None
        while not self._ready:
            try:
                chunk = await self._chunks.__anext__()
            except StopAsyncIteration:
                self._ready.extend(self._split.end())
                return bool(self._ready)
            self._ready.extend(self._split.feed(chunk))
        return True

    async def aclose(self) -> None:
        self._start = self._chunks = None  # a later one ends at once (whole if footed)
        self._ready.clear()
        response, self._response = self._response, None
        if response is not None:
            await response.aclose()

    async def __aenter__(self) -> AsyncPackStream:
        return self

    async def __aexit__(self, *_: type[BaseException] | BaseException | TracebackType | None
                        ) -> None:
        await self.aclose()
