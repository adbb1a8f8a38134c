"""``context_service.client`` at the edges a caller meets without a service to blame: answers
that are not the contract's, pack streams cut or overgrown, what is sent again and what never
is, ``Retry-After`` in both of its forms, credentials that no header can carry, and errors that
cross a process boundary (httpx's mock transport stands in for the network)."""

from __future__ import annotations

import asyncio
import inspect
import logging
import pickle
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import msgspec
import pytest

from context_service.client import (
    ApiError,
    AsyncClient,
    Client,
    InvalidAnswer,
    NotFound,
    RateLimited,
    Retry,
    ServiceUnavailable,
    StreamFailed,
    routes,
)
from context_service.contract import agent as c
from tests.support.pack_lines import BASE, FOOTER, HEADER, ITEM, Chunks

TOKEN = "bdk_0123456789abcdef_" + "S" * 43
HEADER_LINE, ITEM_LINE, FOOTER_LINE = (msgspec.json.encode(line) + b"\n" for line in (
    HEADER, c.ItemLine(item=ITEM), FOOTER))
UNAVAILABLE = {"code": "SERVICE_UNAVAILABLE", "message": "not now"}


Handler = Callable[[httpx.Request], httpx.Response]


def _sync(handle: Handler, **kw: Any) -> Client:
    return Client(token=TOKEN, http=httpx.Client(
        base_url=BASE, transport=httpx.MockTransport(handle)), sleep=lambda _: None, **kw)


def _async(handle: Handler, **kw: Any) -> AsyncClient:
    async def skip(_: float) -> None:
        return None
    return AsyncClient(token=TOKEN, http=httpx.AsyncClient(
        base_url=BASE, transport=httpx.MockTransport(handle)), sleep=skip, **kw)


def _both(handle: Handler, call: Callable[[Any], Any], **kw: Any) -> list[Any]:
    """What ``call`` gives (or raises) through the synchronous and the asynchronous client."""
    outcomes: list[Any] = []
    try:
        outcomes.append(call(_sync(handle, **kw)))
    except Exception as exc:  # the outcome under test
        outcomes.append(exc)

    async def run() -> Any:
        return await call(_async(handle, **kw))

    try:
        outcomes.append(asyncio.run(run()))
    except Exception as exc:
        outcomes.append(exc)
    return outcomes


def _answering(status: int, body: bytes, headers: dict[str, str] | None = None,
               seen: list[httpx.Request] | None = None) -> Handler:
    def handle(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, content=body, headers=headers)
    return handle


# --- the two clients are one API ----------------------------------------------------------------


def test_the_async_client_has_the_sync_clients_routes_and_arguments() -> None:
    def routes_of(cls: type) -> dict[str, list[str]]:
        return {name: list(inspect.signature(fn).parameters)
                for name, fn in vars(cls).items() if inspect.isfunction(fn)
                and not name.startswith("_") and name not in ("close", "aclose")}

    assert routes_of(Client) == routes_of(AsyncClient)
    for name in routes_of(Client):
        sync, aio = (inspect.signature(getattr(cls, name)) for cls in (Client, AsyncClient))
        assert [p.annotation for p in sync.parameters.values()] == [
            p.annotation for p in aio.parameters.values()], name
        if name != "stream_pack":
            assert sync.return_annotation == aio.return_annotation, name


# --- answers that are not the contract's --------------------------------------------------------


@pytest.mark.parametrize("body", [
    b"<html><body>Sign in</body></html>",  # a proxy's login page, answered 200
    b'{"items": [{"id": "finance", "na',  # cut short
    b"",
    b'{"items": "none"}',  # another shape
])
def test_a_2xx_answer_that_is_not_the_contracts_is_invalid_answer(body: bytes) -> None:
    for outcome in _both(_answering(200, body), lambda cs: cs.list_context_sets()):
        assert isinstance(outcome, InvalidAnswer), repr(outcome)
        assert outcome.status == 200 and outcome.code == "INVALID_ANSWER"
        assert "ContextSetList" in outcome.message


@pytest.mark.parametrize(("status", "body", "headers", "said"), [
    (502, b"<html><h1>502 Bad Gateway</h1></html>", {"Content-Type": "text/html"},
     "the service answered 502 Bad Gateway"),
    (500, b"", {}, "the service answered 500 Internal Server Error"),
    (404, b'{"code": "NOT_FO', {}, "the service answered 404 Not Found"),
    (308, b"", {"Location": "https://cs.example/api/agent/v1/context-sets/list?x=1"},
     "the service answered 308 Permanent Redirect: a redirect to "
     "https://cs.example/api/agent/v1/context-sets/list, which the client does not follow"),
])
def test_an_error_answer_that_is_not_the_apis_says_what_came(
        status: int, body: bytes, headers: dict[str, str], said: str) -> None:
    for outcome in _both(_answering(status, body, headers), lambda cs: cs.list_context_sets()):
        assert isinstance(outcome, ApiError) and outcome.status == status, repr(outcome)
        assert (outcome.code, outcome.message) == ("HTTP_ERROR", said)


def test_an_error_answer_that_breaks_off_while_read_is_still_the_status() -> None:
    """The stream route's error body is read after the status: a connection lost then is the
    status's error (its body unread), and the answer is closed."""
    bodies: list[Chunks] = []

    def handle(_: httpx.Request) -> httpx.Response:
        bodies.append(Chunks([b'{"code": "NOT_'], httpx.ReadError("connection reset")))
        return httpx.Response(404, stream=bodies[-1])

    def stream(cs: Any) -> Any:
        return cs.stream_pack("task") if isinstance(cs, Client) else _drain(cs)

    for outcome in _both(handle, stream):
        assert isinstance(outcome, NotFound) and outcome.code == "HTTP_ERROR", repr(outcome)
    assert len(bodies) == 2 and all(body.closed for body in bodies)


async def _drain(cs: AsyncClient) -> list[c.PackItem]:
    return [item async for item in cs.stream_pack("task")]


# --- pack streams -------------------------------------------------------------------------------


def _stream(chunks: list[bytes], error: Exception | None = None
            ) -> tuple[Handler, list[Chunks]]:
    bodies: list[Chunks] = []

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == routes.STREAM
        bodies.append(Chunks(list(chunks), error))
        return httpx.Response(200, stream=bodies[-1], headers={"Content-Type": routes.NDJSON})
    return handle, bodies


def _read_stream(cs: Any) -> Any:
    if isinstance(cs, Client):
        with cs.stream_pack("task") as stream:
            return list(stream)
    return _drain(cs)


@pytest.mark.parametrize("cut", [
    ITEM_LINE[:-30],  # the connection closed mid-line
    FOOTER_LINE[:-2],
])
def test_a_stream_cut_mid_line_is_incomplete(cut: bytes) -> None:
    handle, bodies = _stream([HEADER_LINE, ITEM_LINE, cut])
    for outcome in _both(handle, _read_stream):
        assert isinstance(outcome, StreamFailed), repr(outcome)
        assert outcome.code == "STREAM_INCOMPLETE" and "mid-line" in outcome.message
    assert all(body.closed for body in bodies)


def test_a_stream_line_split_across_chunks_and_a_footer_without_its_line_feed_read_whole() -> None:
    """Lines arrive in pieces; a last line that is whole JSON is read even without its LF."""
    whole = HEADER_LINE + ITEM_LINE + FOOTER_LINE[:-1]
    handle, _ = _stream([whole[i:i + 7] for i in range(0, len(whole), 7)])
    assert _both(handle, _read_stream) == [[ITEM], [ITEM]]


@pytest.mark.parametrize("line", [b'{"type": "item", "item": {"id": 1}}\n', b"<html>\n"])
def test_a_stream_line_that_does_not_decode_fails_the_stream(line: bytes) -> None:
    handle, bodies = _stream([HEADER_LINE, line, FOOTER_LINE])
    for outcome in _both(handle, _read_stream):
        assert isinstance(outcome, StreamFailed), repr(outcome)
        assert outcome.code == "INVALID_ANSWER"
    assert all(body.closed for body in bodies)


def test_an_over_long_stream_line_fails_without_being_held() -> None:
    """A line that never ends (a proxy's endless body, a broken service) is refused once it
    passes the bound, not buffered without end."""
    endless = [b"x" * 2**20] * (routes.MAX_LINE // 2**20 + 2)
    handle, bodies = _stream([HEADER_LINE, *endless])
    for outcome in _both(handle, _read_stream):
        assert isinstance(outcome, StreamFailed), repr(outcome)
        assert outcome.code == "INVALID_ANSWER" and "longer than" in outcome.message
    assert all(body.closed for body in bodies)


def test_a_stream_left_early_is_closed_sync() -> None:
    """A ``for`` left by ``break`` (the generator closed), and a stream never iterated but
    closed by its context manager."""
    handle, bodies = _stream([HEADER_LINE, ITEM_LINE, ITEM_LINE, FOOTER_LINE])
    cs = _sync(handle)
    stream = cs.stream_pack("task")
    for _ in stream:
        break
    with cs.stream_pack("task"):
        pass
    assert [body.closed for body in bodies] == [True, True]


def test_a_stream_iterated_again_after_closing_early_is_not_a_whole_pack() -> None:
    """The rest of a stream closed before its footer is gone: iterating it again says so (it
    was a bare ``StreamClosed``, or, asynchronously, an empty end as if the pack were whole)."""
    handle, _ = _stream([HEADER_LINE, ITEM_LINE, ITEM_LINE, FOOTER_LINE])
    with _sync(handle).stream_pack("task") as stream:
        assert next(iter(stream)) == ITEM
    with pytest.raises(StreamFailed) as again:
        list(stream)
    assert again.value.code == "STREAM_INCOMPLETE"

    async def run() -> list[c.PackItem]:
        async with _async(handle).stream_pack("task") as left:
            async for _ in left:
                break
        return [item async for item in left]

    with pytest.raises(StreamFailed) as async_again:
        asyncio.run(run())
    assert async_again.value.code == "STREAM_INCOMPLETE"


def test_an_async_stream_cancelled_mid_read_is_closed() -> None:
    """A reader task cancelled while it waits for the next line closes the answer."""
    release = asyncio.Event()

    class Slow(Chunks):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield HEADER_LINE + ITEM_LINE
            await release.wait()
            yield FOOTER_LINE

    body = Slow([])

    def handle(_: httpx.Request) -> httpx.Response:
        return httpx.Response(200, stream=body)

    async def run() -> None:
        stream = _async(handle).stream_pack("task")
        first = await stream.__anext__()
        assert first == ITEM
        task = asyncio.ensure_future(stream.__anext__())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert body.closed


# --- timeouts -----------------------------------------------------------------------------------


def test_a_pack_given_a_long_deadline_is_waited_for_past_it() -> None:
    """The service checks a pack's deadline (``maxLatencyMs``, up to 60 s) before each step of
    retrieval, so it can answer after it: the default 60 s read timeout ended such a pack as
    ``UNREACHABLE`` just as it came. Its read timeout is the deadline and a margin, never
    shorter than the client's; other requests keep the client's."""
    reads: dict[str, float | None] = {}

    def handle(request: httpx.Request) -> httpx.Response:
        reads[request.url.path] = request.extensions["timeout"]["read"]
        return httpx.Response(500)

    slow = c.PackRequest(task="t", budget=c.Budget(max_latency_ms=60000))
    for call in (lambda cs: cs.call(routes.PACKS, {"task": "t", "budget": {"maxTokens": 300}}),
                 lambda cs: cs.list_context_sets(), lambda cs: cs.stream_pack(slow)):
        with pytest.raises(ApiError):
            call(Client(token=TOKEN, http=httpx.Client(
                base_url=BASE, timeout=60, transport=httpx.MockTransport(handle))))
    assert reads == {routes.PACKS: 60.0, routes.SETS_LIST: 60.0, routes.STREAM: 75.0}
    with pytest.raises(ApiError):  # the MCP tools' way: the tool's arguments as they came
        Client(token=TOKEN, http=httpx.Client(base_url=BASE, transport=httpx.MockTransport(
            handle))).call(routes.PACKS, {"task": "t", "budget": {"maxLatencyMs": 60000}})
    assert reads[routes.PACKS] == 75.0
    for budget, read in ((None, 60.0), (c.Budget(max_tokens=2000), 60.0),
                         (c.Budget(max_latency_ms=50000), 65.0)):
        with pytest.raises(ApiError):
            Client(BASE, TOKEN, http=httpx.Client(
                timeout=60, base_url=BASE, transport=httpx.MockTransport(handle))).pack(
                c.PackRequest(task="t", budget=budget))
        assert reads[routes.PACKS] == read

    async def run() -> None:
        async with httpx.AsyncClient(base_url=BASE, timeout=60,
                                     transport=httpx.MockTransport(handle)) as http:
            with pytest.raises(ApiError):
                await AsyncClient(token=TOKEN, http=http).pack(slow)

    reads.clear()
    asyncio.run(run())
    assert reads[routes.PACKS] == 75.0


# --- what is sent again -------------------------------------------------------------------------


def _count(status: int, headers: dict[str, str] | None = None,
           then: int = 200) -> tuple[Handler, list[httpx.Request]]:
    """``status`` to the first request, ``then`` (an empty listing) to the others."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            return httpx.Response(status, json=UNAVAILABLE, headers=headers)
        return httpx.Response(then, json={"items": []})
    return handle, seen


def test_a_bare_503_is_not_sent_again_for_a_recorded_request() -> None:
    """A 503 without ``Retry-After`` may be a proxy's after the service applied the request: a
    pack (recorded as a release), a replay, a template run are not sent twice on it."""
    def calls() -> list[Callable[[Any], Any]]:
        return [lambda cs: cs.pack("task"), lambda cs: cs.replay("rp_x", "verify"),
                lambda cs: cs.run_query_template(c.RunQueryTemplateRequest(template_id="t")),
                lambda cs: cs.call(routes.PACKS, c.PackRequest(task="task"))]

    for call in calls():
        seen: list[httpx.Request] = []
        handle = _answering(503, msgspec.json.encode(UNAVAILABLE), seen=seen)
        for outcome in _both(handle, call):
            assert isinstance(outcome, ServiceUnavailable), repr(outcome)
        assert len(seen) == 2  # once by each client


def test_a_503_with_retry_after_and_a_bare_503_to_a_read_are_sent_again() -> None:
    """The service's own 503 says ``Retry-After`` (nothing was done); a read is safe anyway."""
    handle, seen = _count(503, {"Retry-After": "1"})
    assert _both(handle, lambda cs: cs.call(routes.PACKS, c.PackRequest(task="t"))) == [
        b'{"items":[]}', b'{"items":[]}']
    for read in (lambda cs: cs.list_context_sets(),
                 lambda cs: cs.lookup_definitions(c.LookupDefinitionsRequest(term="t")),
                 lambda cs: cs.call(routes.MATCH, {"question": "q"})):
        handle, seen = _count(503)
        outcomes = _both(handle, read)
        assert not any(isinstance(o, Exception) for o in outcomes), outcomes
        assert len(seen) == 3  # refused once, then answered each client


def test_a_connection_refused_is_tried_again_and_a_broken_answer_is_not() -> None:
    """Refused before anything was sent: safe to send, with the backoff. A connection lost
    after sending (the request may have been applied) is not sent again."""
    for failure, tries in ((httpx.ConnectError("refused"), 4),
                           (httpx.ConnectTimeout("no answer to the handshake"), 4),
                           (httpx.RemoteProtocolError("server disconnected"), 1),
                           (httpx.ReadTimeout("slow"), 1)):
        seen: list[httpx.Request] = []

        def handle(request: httpx.Request, failure: Exception = failure,
                   seen: list[httpx.Request] = seen) -> httpx.Response:
            seen.append(request)
            raise failure

        for outcome in _both(handle, lambda cs: cs.pack("task")):
            assert isinstance(outcome, ServiceUnavailable) and outcome.status == 0
        assert len(seen) == 2 * tries, failure


def test_a_connection_refused_then_accepted_is_answered() -> None:
    waits: list[float] = []
    seen: list[int] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(1)
        if len(seen) < 3:
            raise httpx.ConnectError("refused")
        return httpx.Response(200, json={"items": []})

    cs = Client(token=TOKEN, http=httpx.Client(base_url=BASE, transport=httpx.MockTransport(
        handle)), sleep=waits.append, retry=Retry(backoff=0.25))
    assert cs.list_context_sets() == c.ContextSetList(items=[])
    assert len(waits) == 2 and 0.125 <= waits[0] <= 0.25 and 0.25 <= waits[1] <= 0.5


def test_retry_after_as_an_http_date() -> None:
    """``Retry-After: <HTTP-date>`` (RFC 9110 §10.2.3), counted from the answer's ``Date`` (the
    service's own clock); a date already past is no wait."""
    date = "Sun, 06 Dec 2026 12:00:00 GMT"
    handle, _ = _count(429, {"Retry-After": "Sun, 06 Dec 2026 12:00:07 GMT", "Date": date})
    waits: list[float] = []
    cs = Client(token=TOKEN, http=httpx.Client(base_url=BASE, transport=httpx.MockTransport(
        handle)), sleep=waits.append)
    assert cs.list_context_sets().items == [] and waits == [7.0]
    with pytest.raises(RateLimited) as past:
        _sync(_answering(429, b"{}", {"Retry-After": "Sat, 01 Jan 2000 00:00:00 GMT"}),
              retry=Retry(attempts=1)).list_context_sets()
    assert past.value.retry_after == 0.0


@pytest.mark.parametrize("value", ["9" * 400, "Fri, 31 Dec 9999 23:59:59 GMT"])
def test_an_absurd_retry_after_is_not_waited_for(value: str) -> None:
    waits: list[float] = []
    seen: list[httpx.Request] = []
    cs = Client(token=TOKEN, http=httpx.Client(base_url=BASE, transport=httpx.MockTransport(
        _answering(429, b"{}", {"Retry-After": value}, seen))), sleep=waits.append)
    with pytest.raises(RateLimited):
        cs.list_context_sets()
    assert waits == [] and len(seen) == 1


def test_the_backoff_is_bounded_however_many_attempts() -> None:
    retry = Retry(attempts=5000, backoff=0.25, max_wait=30.0)
    assert retry.wait(429, 4000, None) == 30.0
    waits = [retry.wait(429, attempt, None) for attempt in range(0, 4000, 97)]
    assert all(w is not None and 0 < w <= 30.0 for w in waits)


# --- credentials and errors ---------------------------------------------------------------------


@pytest.mark.parametrize(("token", "headers"), [
    (TOKEN + "\n", {}),  # read from a file with its line end
    (TOKEN + "\r\nX-Injected: 1", {}),
    (TOKEN[:-4] + "éééé", {}),
    (TOKEN, {"X-Context-Subject": "user:alice\nX-Injected: 1"}),
])
def test_a_credential_no_header_can_carry_is_refused_unechoed(
        token: str, headers: dict[str, str]) -> None:
    """httpx's ``Illegal header value b'Bearer bdk_…'`` quoted the credential in the client's
    error (a log line, a traceback); a non-ASCII one was a bare ``UnicodeEncodeError``."""
    for make in (Client, AsyncClient):
        with pytest.raises(ValueError, match="header") as refused:
            make(BASE, token, headers=headers)
        said = str(refused.value) + repr(refused.value)
        assert "S" * 12 not in said and "é" not in said and "alice" not in said, said


def test_a_transport_quoting_a_header_is_not_echoed() -> None:
    def leaky(request: httpx.Request) -> httpx.Response:
        raise httpx.LocalProtocolError(f"Illegal header value {request.headers['Authorization']!r}")

    for outcome in _both(leaky, lambda cs: cs.list_context_sets()):
        assert isinstance(outcome, ApiError), repr(outcome)
        assert TOKEN not in str(outcome) and TOKEN not in repr(outcome)


def test_the_credential_is_in_no_repr_log_or_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    subject = "user:secret-subject"
    seen: list[httpx.Request] = []
    cs = _sync(_answering(401, b'{"code": "UNAUTHORIZED", "message": "not valid"}', seen=seen),
               headers={"X-Context-Subject": subject})
    with pytest.raises(ApiError) as refused:
        cs.list_context_sets()
    assert seen[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert seen[0].headers["X-Context-Subject"] == subject
    said = " ".join([repr(cs), str(refused.value), repr(refused.value), caplog.text])
    assert TOKEN not in said and subject not in said


@pytest.mark.parametrize("error", [
    NotFound(404, "NOT_FOUND", "replay not found"),
    RateLimited(429, "RATE_LIMITED", "slow down", None, 2.0),
    StreamFailed(200, "STREAM_INCOMPLETE", "the stream ended before its footer"),
    ApiError(400, "VALIDATION_ERROR", "request validation failed",
             [{"path": "$.task", "message": "must not be blank"}]),
])
def test_an_error_crosses_a_process_boundary(error: ApiError) -> None:
    """``concurrent.futures`` and ``multiprocessing`` pickle a worker's exception: it comes
    back whole, not as a ``TypeError`` about ``__init__``'s arguments."""
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert (back.status, back.code, back.message, back.details, back.retry_after) == (
        error.status, error.code, error.message, error.details, error.retry_after)


@pytest.mark.parametrize("replay_id", [".", ".."])
def test_a_replay_id_of_dots_stays_the_replay_routes_segment(replay_id: str) -> None:
    """A URL's dot segments are removed before sending (``replays/..`` is the agent API's
    root): the id is sent encoded, so the service answers for that replay id, not for another
    route."""
    seen: list[httpx.Request] = []
    _both(_answering(404, b'{"code":"NOT_FOUND","message":"replay not found"}', seen=seen),
          lambda client: client.replay(replay_id, "verify"))
    assert [request.url.raw_path for request in seen] == [
        f"/api/agent/v1/replays/{'%2E' * len(replay_id)}".encode()] * 2
