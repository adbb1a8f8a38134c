"""The synchronous client: one ``httpx.Client``, the credential on every request, a request
sent again only where that is safe (``Retry``), answers decoded into the contract's Structs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx
import msgspec

from context_service.client import routes
from context_service.client.errors import (
    ApiError,
    StreamFailed,
    error_of,
    interrupted,
    unreachable,
    unreadable,
)
from context_service.client.retry import Retry
from context_service.contract import agent as c

T = TypeVar("T")
# failures before anything was sent: the request cannot have been applied
UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class Client:
    """``Client(url, token)``; or ``Client(token=..., http=an httpx.Client)`` with its own base
    URL and transport. Close it (or use it as a context manager) when done."""

    def __init__(self, url: str = "", token: str = "", *, timeout: float = 60.0,
                 retry: Retry | None = None, http: httpx.Client | None = None,
                 headers: Mapping[str, str] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.headers = routes.headers(token, headers)
        self.http = http if http is not None else httpx.Client(base_url=url, timeout=timeout)
        self._owned = http is None
        self.retry = retry or Retry()
        self.sleep = sleep

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self.http.close()

    # --- transport ------------------------------------------------------------------------------

    def _send(self, path: str, body: bytes, stream: bool = False) -> httpx.Response:
        """The 2xx answer of a POST, sent again only where that is safe (``Retry``); raises the
        typed error otherwise. A streamed answer is returned unread (the caller closes it)."""
        read, attempt = path in routes.READS, -1
        timeout = routes.waited(self.http.timeout, routes.patience(path, body))
        while True:
            attempt += 1
            try:
                request = self.http.build_request("POST", path, content=body,
                                                  headers=self.headers, timeout=timeout)
                response = self.http.send(request, stream=stream)
            except httpx.TransportError as exc:
                wait = self.retry.unsent(attempt) if isinstance(exc, UNSENT) else None
                if wait is None:
                    raise unreachable(exc) from exc
                self.sleep(wait)
                continue
            if response.is_success:
                return response
            error = self._refusal(response)
            wait = self.retry.wait(response.status_code, attempt, error.retry_after, read)
            if wait is None:
                raise error
            self.sleep(wait)

    @staticmethod
    def _refusal(response: httpx.Response) -> ApiError:
        """The typed error of a non-2xx answer, the answer closed; a body that breaks off
        while read is none (the status still says what happened)."""
        try:
            body = response.read()
        except httpx.TransportError:
            body = b""
        finally:
            response.close()
        return error_of(response, body)

    def call(self, path: str, body: msgspec.Struct | dict[str, Any]) -> bytes:
        """The raw answer of an agent route (the service's exact bytes)."""
        return self._send(path, routes.encode(body)).content

    def exchange(self, path: str, body: msgspec.Struct | dict[str, Any],
                 answer: type[T]) -> tuple[T, bytes]:
        """The answer of an agent route decoded as ``answer``, and the service's exact bytes
        (msgspec's error when it does not decode, for a caller that words it its own way)."""
        raw = self.call(path, body)
        return msgspec.json.decode(raw, type=answer), raw

    def _typed(self, path: str, body: msgspec.Struct | dict[str, Any], answer: type[T]) -> T:
        response = self._send(path, routes.encode(body))
        return routes.decoded(response.content, answer, response.status_code)

    # --- the agent routes -----------------------------------------------------------------------

    def pack(self, request: c.PackRequest | str) -> c.ContextPack:
        return self._typed(routes.PACKS, routes.pack_request(request), c.ContextPack)

    def stream_pack(self, request: c.PackRequest | str) -> PackStream:
        """The pack as it streams: iterate over its items; ``header`` and ``footer`` are set as
        their lines arrive. Close it (or use it as a context manager) if you stop early."""
        response = self._send(routes.STREAM, routes.encode(routes.pack_request(request)),
                              stream=True)
        return PackStream(routes.split(response.iter_bytes()), response.close)

    def replay(self, replay_id: str, mode: Literal["verify", "recompute"],
               task: str | None = None) -> c.Replay:
        body = c.ReplayRequest(mode=mode, task=task)
        return self._typed(routes.replay(replay_id), body, c.Replay)  # type: ignore[arg-type]

    def list_context_sets(self, request: c.ListContextSetsRequest | None = None
                          ) -> c.ContextSetList:
        return self._typed(routes.SETS_LIST, request or c.ListContextSetsRequest(),
                           c.ContextSetList)

    def get_context_set(self, context_set_id: str | None = None) -> c.AgentContextSet:
        body = c.GetContextSetRequest(context_set_id=context_set_id)
        return self._typed(routes.SETS_GET, body, c.AgentContextSet)

    def lookup_definitions(self, request: c.LookupDefinitionsRequest) -> c.DefinitionMatches:
        return self._typed(routes.LOOKUP, request, c.DefinitionMatches)

    def match_verified_answers(self, request: c.MatchVerifiedAnswersRequest
                               ) -> c.AnswerMatches:
        return self._typed(routes.MATCH, request, c.AnswerMatches)

    def list_fields(self, collection_id: str) -> c.FieldListing:
        return self._typed(routes.FIELDS_LIST, c.ListFieldsRequest(collection_id=collection_id),
                           c.FieldListing)

    def query_fields(self, request: c.QueryFieldsRequest) -> c.FieldAnswer:
        return self._typed(routes.FIELDS_QUERY, request, c.FieldAnswer)

    def run_query_template(self, request: c.RunQueryTemplateRequest) -> c.TemplateRows:
        return self._typed(routes.RUN, request, c.TemplateRows)


class PackLines:
    """What a pack stream's lines said so far: the header, the footer; the item of each item
    line. A stream is complete once its footer arrived: one that ends, or breaks off, before it
    raises ``StreamFailed`` (its pack is not complete), as an error line does."""

    def __init__(self) -> None:
        self.header: c.HeaderLine | None = None
        self.footer: c.FooterLine | None = None

    def take(self, line: c.PackLine | None) -> c.PackItem | None:
        """Record a header or footer; the item of an item line; raise on an error line; skip a
        line of a type a later version added (None)."""
        if line is None:
            return None
        if isinstance(line, c.ItemLine):
            return line.item
        if isinstance(line, c.HeaderLine):
            self.header = line
        elif isinstance(line, c.FooterLine):
            self.footer = line
        else:
            raise StreamFailed(200, line.code, line.message)
        return None

    def read(self, raw: str | bytes) -> c.PackItem | None:
        """``take`` of one line as it came (a blank one is skipped): one that does not decode
        raises ``StreamFailed``, incomplete if it was the last one, cut mid-line."""
        data = raw.encode() if isinstance(raw, str) else raw
        if not data:
            return None
        try:
            line = routes.line(data)
        except msgspec.DecodeError as exc:  # msgspec's ValidationError is one
            raise unreadable(exc, cut=isinstance(raw, routes.Cut)) from exc
        return self.take(line)

    def ended(self) -> None:
        """The lines are over: raise unless the footer came."""
        if self.footer is None:
            raise interrupted()


class PackStream(PackLines):
    """The items of a streamed pack, in pack order, decoded as their lines arrive."""

    def __init__(self, lines: Iterator[str] | Iterator[bytes], close: Callable[[], None]
                 ) -> None:
        super().__init__()
        self._lines = lines
        self._close = close
        self._closed = False

    def __iter__(self) -> Iterator[c.PackItem]:
        if self._closed:  # what was not read is gone: whole only if the footer came
            self.ended()
            return
        try:
            for raw in self._lines:
                item = self.read(raw)
                if item is not None:
                    yield item
            self.ended()
        except httpx.TransportError as exc:  # the connection broke off mid-stream
            raise interrupted(exc) from exc
        finally:
            self.close()

    def close(self) -> None:
        self._closed = True
        self._close()

    def __enter__(self) -> PackStream:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()


__all__ = ["ApiError", "Client", "PackStream"]
