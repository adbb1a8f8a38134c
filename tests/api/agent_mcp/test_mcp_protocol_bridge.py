"""``contextctl mcp``'s bridge in front of this service's own ``/mcp`` (in process, over ASGI),
driven by the SDK's client, against the specification's error rules: an unknown tool and a
made-up ``tools/list`` cursor are the protocol error ``-32602`` through the bridge as they are
at ``/mcp`` (the bridge sends both on to the service and passes its JSON-RPC error on as it
is); a call the credential may not make stays a tool error."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import mcp_types as types
import pytest
from litestar import Litestar
from mcp import Client, MCPError

from context_service.client import AsyncClient
from context_service.contextctl.mcp_bridge import Bridge
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import BASE, Workspace
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
INVALID_PARAMS = -32602


def _through_bridge(app: Litestar, bearer: str,
                    use: Callable[[Client], Coroutine[Any, Any, Any]]) -> tuple[Any, list[Any]]:
    """What ``use`` gets from the bridge's server, the bridge's client reaching ``app``; the
    JSON-RPC messages the bridge posted to the service."""
    posted: list[Any] = []

    async def seen(request: httpx.Request) -> None:
        if request.url.path == "/mcp":
            posted.append(httpx.Response(200, content=request.content).json())

    async def run() -> Any:
        bridge = Bridge(BASE, bearer, {})
        bridge.client = AsyncClient(token=bearer, http=httpx.AsyncClient(
            base_url=BASE, transport=httpx.ASGITransport(app=app),
            event_hooks={"request": [seen]}))
        try:
            async with app.lifespan(), Client(bridge.server()) as client:
                return await use(client)
        finally:
            await bridge.client.http.aclose()

    return asyncio.run(run()), posted


async def _error_of(call: Coroutine[Any, Any, Any]) -> types.ErrorData:
    try:
        answer = await call
    except MCPError as exc:
        return exc.error
    raise AssertionError(f"no JSON-RPC error but {answer!r}")


def test_an_unknown_tool_is_invalid_params_through_the_bridge(workspace: Workspace,
                                                             mcp_app: Litestar) -> None:
    """The bridge's catalogue lacks the tool, so it asks the service (a newer one may have it);
    the service's ``-32602`` reaches the client as it is. It was the service's tool error."""
    async def use(client: Client) -> tuple[types.ErrorData, types.CallToolResult]:
        return (await _error_of(client.call_tool("no_such_tool", {"x": 1})),
                await client.call_tool("run_query_template", {"templateId": "passages"}))

    (unknown, forbidden), posted = _through_bridge(mcp_app, workspace.reader, use)
    assert unknown.code == INVALID_PARAMS, unknown
    assert unknown.message == "Unknown tool: no_such_tool"
    assert [m["params"]["name"] for m in posted if m["method"] == "tools/call"] == [
        "no_such_tool"]
    assert forbidden.is_error and forbidden.structured_content is not None
    assert forbidden.structured_content["code"] == "FORBIDDEN"


def test_a_cursor_never_given_is_invalid_params_through_the_bridge(workspace: Workspace,
                                                                  mcp_app: Litestar) -> None:
    """The cursor is the service's to judge (it names a page of the service's listing): sent
    on, and the service's ``-32602`` passed on; it was the whole listing again."""
    async def use(client: Client) -> tuple[types.ErrorData, types.ListToolsResult]:
        return (await _error_of(client.list_tools(cursor="made-up")),
                await client.list_tools())

    (error, first), posted = _through_bridge(mcp_app, workspace.reader, use)
    assert error.code == INVALID_PARAMS and "cursor" in error.message, error
    assert [m.get("params") for m in posted] == [{"cursor": "made-up"}, None]
    assert first.next_cursor is None and "context_pack" in [t.name for t in first.tools]
