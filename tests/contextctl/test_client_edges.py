"""Edges of ``context_service.client`` and of ``contextctl mcp``'s bridge without a service
(httpx's mock transport stands in for the network): a ``Retry-After`` that is not a delay, pack
streams that end or break off before their footer, the asynchronous stream's header and footer,
a timeout's message, and the bridge's tool listing when the service refuses it or is not there."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any

import click
import httpx
import msgspec
import pytest
from mcp import Client as McpClient
from mcp import MCPError, StdioServerParameters

from context_service.client import (
    AsyncClient,
    Client,
    RateLimited,
    Retry,
    ServiceUnavailable,
    StreamFailed,
    routes,
)
from context_service.contextctl.mcp_bridge import Bridge
from context_service.contract import agent as c
from context_service.contract import tools as catalogue
from tests.support.pack_lines import BASE, FOOTER, HASH, HEADER, ITEM, Chunks

BEARER = "bdk_0123456789abcdef_" + "A" * 43


def _lines(*lines: c.PackLine) -> list[bytes]:
    return [msgspec.json.encode(line) + b"\n" for line in lines]


def _streaming(body: Chunks) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == routes.STREAM
        return httpx.Response(200, stream=body, headers={"Content-Type": routes.NDJSON})
    return handle


def _sync(handle: Callable[[httpx.Request], httpx.Response], **kw: Any) -> Client:
    return Client(token="bdk_x", http=httpx.Client(base_url=BASE,
                                                  transport=httpx.MockTransport(handle)), **kw)


def _async(handle: Callable[[httpx.Request], httpx.Response], **kw: Any) -> AsyncClient:
    return AsyncClient(token="bdk_x", http=httpx.AsyncClient(
        base_url=BASE, transport=httpx.MockTransport(handle)), **kw)


def test_a_retry_after_that_is_not_ascii_digits_is_no_delay() -> None:
    """``"\\u00b2".isdigit()`` is true, and a header byte 0xB2 reads as that character."""
    def handle(_: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"code": "RATE_LIMITED", "message": "slow down"},
                              headers={"Retry-After": b"\xb2"})

    with pytest.raises(RateLimited) as limited:
        _sync(handle, retry=Retry(attempts=1)).list_context_sets()
    assert limited.value.retry_after is None and limited.value.code == "RATE_LIMITED"

    async def run() -> None:
        await _async(handle, retry=Retry(attempts=1)).list_context_sets()

    with pytest.raises(RateLimited):
        asyncio.run(run())


@pytest.mark.parametrize("error", [None, httpx.ReadError("connection reset")])
def test_a_stream_without_its_footer_fails_sync(error: Exception | None) -> None:
    """Ended cleanly or broken off after an item: the pack is not complete, said as the typed
    ``StreamFailed`` (never a silent partial pack, never an httpx error), the answer closed."""
    body = Chunks(_lines(HEADER, c.ItemLine(item=ITEM)), error)
    stream = _sync(_streaming(body)).stream_pack("task")
    seen: list[c.PackItem] = []
    with pytest.raises(StreamFailed) as failed:
        seen.extend(stream)
    assert seen == [ITEM] and stream.header == HEADER and stream.footer is None
    assert failed.value.code == "STREAM_INCOMPLETE" and failed.value.message
    assert body.closed


@pytest.mark.parametrize("error", [None, httpx.ReadError("connection reset")])
def test_a_stream_without_its_footer_fails_async(error: Exception | None) -> None:
    body = Chunks(_lines(HEADER, c.ItemLine(item=ITEM)), error)
    seen: list[c.PackItem] = []

    async def run() -> None:
        async for item in _async(_streaming(body)).stream_pack("task"):
            seen.append(item)

    with pytest.raises(StreamFailed) as failed:
        asyncio.run(run())
    assert seen == [ITEM] and failed.value.code == "STREAM_INCOMPLETE"
    assert body.closed


def test_the_async_stream_tells_its_header_and_footer() -> None:
    """As the synchronous ``PackStream`` does: the replay id is in the header, the receipt in
    the footer; an async context manager closes a stream left early."""
    whole = Chunks(_lines(HEADER, c.ItemLine(item=ITEM), c.ItemLine(item=ITEM), FOOTER))
    early = Chunks(_lines(HEADER, c.ItemLine(item=ITEM), c.ItemLine(item=ITEM), FOOTER))

    async def run() -> tuple[Any, list[c.PackItem], Any]:
        stream: Any = _async(_streaming(whole)).stream_pack(c.PackRequest(task="task"))
        items = [item async for item in stream]
        async with _async(_streaming(early)).stream_pack("task") as left:
            async for _ in left:
                break
        return stream, items, left

    stream, items, left = asyncio.run(run())
    assert items == [ITEM, ITEM]
    assert stream.header == HEADER and stream.footer == FOOTER
    assert left.header == HEADER and left.footer is None and early.closed and whole.closed


def test_a_timeout_is_unavailable_with_a_message_sync_and_async() -> None:
    """An asynchronous read timeout's own text is empty: the error (and a bridge's tool error,
    ``CODE: message``) still says what happened, as the synchronous client's does."""
    def handle(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("", request=request)

    with pytest.raises(ServiceUnavailable) as sync_failed:
        _sync(handle).list_context_sets()

    async def run() -> None:
        await _async(handle).list_context_sets()

    with pytest.raises(ServiceUnavailable) as async_failed:
        asyncio.run(run())
    for failed in (sync_failed, async_failed):
        assert failed.value.status == 0 and failed.value.code == "UNREACHABLE"
        assert "did not answer in time" in failed.value.message
    assert sync_failed.value.message == async_failed.value.message


def _bridge(handle: Callable[[httpx.Request], httpx.Response] | None,
            url: str = BASE) -> Bridge:
    bridge = Bridge(url, BEARER, {"X-SH-Auth": "gateway"})
    if handle is not None:
        bridge.client = AsyncClient(token=BEARER, headers={"X-SH-Auth": "gateway"},
                                    http=httpx.AsyncClient(
                                        base_url=url, transport=httpx.MockTransport(handle)))
    return bridge


def _listing(bridge: Bridge) -> list[str]:
    async def run() -> list[str]:
        try:
            return [t.name for t in (await bridge.list_tools(None, None)).tools]  # type: ignore[arg-type]
        finally:
            await bridge.client.aclose()
    return asyncio.run(run())


def test_the_bridge_lists_what_the_service_lists() -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        tools = [t.model_dump(mode="json", by_alias=True, exclude_none=True)
                 for t in catalogue.listed({"context:read"})]
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}})

    assert _listing(_bridge(handle)) == [t.name for t in catalogue.TOOLS
                                         if t.scope == "context:read"]
    assert [r.url.path for r in seen] == ["/mcp"]
    assert seen[0].headers["Authorization"] == f"Bearer {BEARER}"
    assert seen[0].headers["X-SH-Auth"] == "gateway"


def _silent(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("timed out", request=request)


@pytest.mark.parametrize(("handle", "url", "message"), [
    (_silent, BASE, "UNREACHABLE: the service did not answer in time"),  # reached, no answer
    (lambda _: httpx.Response(401, json={"code": "UNAUTHORIZED",
                                         "message": "agent credential is not valid"}),
     BASE, "UNAUTHORIZED: agent credential is not valid"),
    (lambda _: httpx.Response(429, json={"code": "RATE_LIMITED", "message": "too many failed "
                                         "attempts"}, headers={"Retry-After": "7"}),
     BASE, "RATE_LIMITED: too many failed attempts; retry after 7 seconds"),
])
def test_the_bridge_says_why_it_cannot_list(handle: Any, url: str, message: str) -> None:
    """A credential refused, a service not there: the agent's client gets a JSON-RPC error
    saying so (``CODE: message``), not a bare "Internal server error"."""
    with pytest.raises(MCPError) as failed:
        _listing(_bridge(handle, url))
    assert failed.value.message.startswith(message), failed.value.message
    assert failed.value.data["code"] == message.split(":")[0]


def test_contextctl_mcp_says_the_service_is_not_there() -> None:
    """Launched by the SDK's stdio client with nothing at ``CS_URL``: the listing is its own
    catalogue (the agent learns the tools), and a call is a tool error naming the cause."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    env.update(CS_URL="http://127.0.0.1:9", CS_AGENT_TOKEN=BEARER)
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "context_service.contextctl", "mcp"], env=env)

    async def run() -> tuple[Any, list[str]]:
        async with McpClient(server) as client:
            called = await client.call_tool("list_context_sets", {})
            return called, [t.name for t in (await client.list_tools()).tools]

    called, listed = asyncio.run(asyncio.wait_for(run(), 60))
    assert called.is_error and called.structured_content["code"] == "UNREACHABLE"
    assert listed == [t.name for t in catalogue.TOOLS]


LATER = b'{"type":"progress","done":1,"of":2}\n'  # a line type a later version might add


def test_a_line_of_a_type_a_later_version_adds_is_skipped() -> None:
    """As an answer's unknown keys are: the sync and async streams and ``contextctl``'s reading
    of a stream give the items and footer of a stream holding such a line; a line of a known
    type that does not decode still raises."""
    from context_service.contextctl.packs import _stream_data, from_stream

    def body() -> list[bytes]:
        header, item, footer = _lines(HEADER, c.ItemLine(item=ITEM), FOOTER)
        return [header, LATER, item, LATER, footer]

    stream = _sync(_streaming(Chunks(body()))).stream_pack("task")
    assert list(stream) == [ITEM] and stream.footer == FOOTER

    async def run() -> list[c.PackItem]:
        return [item async for item in _async(_streaming(Chunks(body()))).stream_pack("task")]

    assert asyncio.run(run()) == [ITEM]
    pack = from_stream(b"".join(body()))
    assert pack.items == [ITEM] and pack.receipt == FOOTER.receipt
    data = _stream_data(b"".join(body()))  # --stream --format yaml
    assert data["items"] == [msgspec.to_builtins(ITEM)] and "done" not in data
    assert data["replayId"] == HEADER.replay_id and data["receipt"]["merkleRoot"] == HASH
    with pytest.raises(click.ClickException, match="before its footer"):
        _stream_data(b"".join(body()[:-1]))
    assert routes.line(LATER) is None
    for broken in (b'{"type":"item"}', b'{"type":7}', b"[1]", b'"item"'):
        with pytest.raises(msgspec.ValidationError):
            routes.line(broken)
