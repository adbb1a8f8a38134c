"""``context_service.client`` and ``contextctl mcp`` against the routes they call, as an agent
developer relies on them: how long each call waits for its answer to start, sync and async alike
(a recompute rebuilds the pack under its recorded deadline, up to the longest a pack may name, so
it is waited for as a pack is: a cut recompute is an error the agent cannot simply send again,
each run being recorded); the stdio bridge with a service gone mid-call; and the bridge walking a
service's listing page by page. Stand-in services: httpx's mock transport, or a socket."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
import pytest
from mcp import Client as McpClient
from mcp import StdioServerParameters

from context_service.client import AsyncClient, Client, routes
from context_service.contextctl.mcp_bridge import Bridge
from context_service.contract import agent as c
from context_service.contract import tools as catalogue
from tests.contextctl.mcp_listing import walk_listing
from tests.support.pack_lines import AS_OF, BASE, FOOTER, HASH, ITEM

BEARER = "bdk_0123456789abcdef_" + "B" * 43
REPLAY_ID = "rp_" + "1" * 32
TASK = "Who is the CFO?"
PACK = c.RecomputedPack(
    pack_id="pk_" + "0" * 32, task=TASK, as_of=AS_OF,
    budget=c.PackBudget(max_tokens=2000, used_tokens=3, coverage="best_effort"),
    complete=True, items=[ITEM], omitted=FOOTER.omitted, missing=[], receipt=FOOTER.receipt)
RECOMPUTED = c.Recomputation(
    replay_id=REPLAY_ID, engine_version=c.EngineVersions(recorded="e/2", current="e/2"),
    pack=PACK, diff=c.PackDiff(added=[], removed=[], changed=[], unchanged=1))
VERIFIED = c.Verification(
    replay_id=REPLAY_ID, position=1,
    items=[c.CheckedItem(id=ITEM.id, status="unchanged", recorded_hash=HASH, current_hash=HASH)],
    summary=c.VerifySummary(unchanged=1, changed=0, unavailable=0), merkle_root=HASH,
    current_merkle_root=HASH, matches=True)
# the longest deadline a pack may name (§7.1), and the client's margin past it
LONGEST = routes.MAX_LATENCY_MS / 1000 + routes.DEADLINE_MARGIN


class Waits:
    """A stand-in service recording the read timeout each request was sent with."""

    def __init__(self) -> None:
        self.reads: dict[str, float | None] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        mode = msgspec.json.decode(request.content).get("mode", "pack")
        self.reads[mode] = request.extensions["timeout"]["read"]
        answer: Any = {"verify": VERIFIED, "recompute": RECOMPUTED}[mode]
        return httpx.Response(200, content=msgspec.json.encode(answer))


def _sync(handle: Callable[[httpx.Request], httpx.Response]) -> Client:
    return Client(token="bdk_x", http=httpx.Client(
        base_url=BASE, timeout=10.0, transport=httpx.MockTransport(handle)))


def _async(handle: Callable[[httpx.Request], httpx.Response]) -> AsyncClient:
    return AsyncClient(token="bdk_x", http=httpx.AsyncClient(
        base_url=BASE, timeout=10.0, transport=httpx.MockTransport(handle)))


@pytest.mark.parametrize("variant", ["sync", "async"])
def test_a_recompute_waits_for_the_deadline_it_rebuilds_the_pack_under(variant: str) -> None:
    waits = Waits()
    if variant == "sync":
        with _sync(waits) as client:
            recomputed = client.replay(REPLAY_ID, "recompute", TASK)
            verified = client.replay(REPLAY_ID, "verify")
    else:
        async def run() -> tuple[c.Replay, c.Replay]:
            async with _async(waits) as client:
                return (await client.replay(REPLAY_ID, "recompute", TASK),
                        await client.replay(REPLAY_ID, "verify"))

        recomputed, verified = asyncio.run(run())
    assert recomputed == RECOMPUTED and verified == VERIFIED
    # the recorded deadline is the service's to know: the longest a pack may name is waited
    assert waits.reads["recompute"] == LONGEST
    assert waits.reads["verify"] == 10.0  # a verify rebuilds nothing: the client's own timeout


class Vanishing:
    """A service that reads each request and goes away mid-answer: an agent route's answer
    breaks off after its status line and half its body (or before any byte), while ``/mcp``
    lists the tools as a service does. Records the path of every request."""

    def __init__(self, half: bool) -> None:
        self.half = half
        self.paths: list[str] = []
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.socket.accept()
            except OSError:  # closed
                return
            with conn:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(body) < length:
            body += conn.recv(65536)
        path = head.split(b" ")[1].decode()
        self.paths.append(path)
        if path == "/mcp":
            listing = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [
                msgspec.to_builtins(t.definition().model_dump(by_alias=True, exclude_none=True))
                for t in catalogue.TOOLS]}}
            answer = msgspec.json.encode(listing)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length:"
                         b" %d\r\nConnection: close\r\n\r\n%s" % (len(answer), answer))
        elif self.half:  # the answer starts, then the service is gone
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 4000\r\n\r\n{\"packId\":\"pk_")
        conn.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.socket.close()


@pytest.mark.parametrize("half", [False, True], ids=["before-answering", "mid-answer"])
def test_the_stdio_bridge_outlives_a_service_gone_mid_call(half: bool) -> None:
    """``contextctl mcp`` launched by the SDK's stdio client: a call whose service goes away
    mid-answer is a tool error ``UNREACHABLE`` in good time, the pack (recorded when applied) is
    sent once, never again, and the bridge answers the next call."""
    service = Vanishing(half)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    env.update(CS_URL=service.url, CS_AGENT_TOKEN=BEARER)
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "context_service.contextctl", "mcp"], env=env)

    async def run() -> tuple[list[str], Any, Any]:
        async with McpClient(server) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            pack = await client.call_tool("context_pack", {"task": TASK})
            sets = await client.call_tool("list_context_sets", {})
            return listed, pack, sets

    try:
        listed, pack, sets = asyncio.run(asyncio.wait_for(run(), 60))
    finally:
        service.close()
    assert listed == [t.name for t in catalogue.TOOLS]
    for result in (pack, sets):
        assert result.is_error and result.structured_content["code"] == "UNREACHABLE", result
        assert BEARER not in result.content[0].text
    packs = [p for p in service.paths if p == routes.PACKS]
    assert packs == [routes.PACKS]  # applied perhaps: never sent again


def _paged_service(seen: list[Any]) -> Callable[[httpx.Request], httpx.Response]:
    """A (newer) service listing its tools in two pages: the first without a cursor, the
    second for the cursor ``page-2``."""
    tools = [t.definition().model_dump(mode="json", by_alias=True, exclude_none=True)
             for t in catalogue.TOOLS]

    def handle(request: httpx.Request) -> httpx.Response:
        message = msgspec.json.decode(request.content)
        cursor = (message.get("params") or {}).get("cursor")
        seen.append(cursor)
        if cursor is None:
            result = {"tools": tools[:4], "nextCursor": "page-2"}
        elif cursor == "page-2":
            result = {"tools": tools[4:]}
        else:
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "error": {
                "code": -32602, "message": "unknown cursor"}})
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": result})

    return handle


def test_the_bridge_walks_the_services_listing_page_by_page() -> None:
    """A client following ``nextCursor`` through ``contextctl mcp`` gets each page of the
    service's listing once and stops: the cursor it sends reaches the service (asked for page
    one again, it would be told page two follows, without end)."""
    seen: list[Any] = []
    bridge = Bridge(BASE, BEARER, {})
    bridge.client = AsyncClient(token=BEARER, http=httpx.AsyncClient(
        base_url=BASE, transport=httpx.MockTransport(_paged_service(seen))))

    assert walk_listing(bridge, len(catalogue.TOOLS) + 1) == [t.name for t in catalogue.TOOLS]
    assert seen == [None, "page-2"]
