"""Edges of ``/mcp`` as a client other than the SDK's may meet them: the stateless endpoint
offers no stream of server messages (``GET``) and no session to end (``DELETE``), so it says so
at once (405, ``Allow: POST``) instead of holding an empty event stream open."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar import Litestar

from context_service.http.limits import MAX_BODY
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import (
    Workspace,
    connected,
    http,
)
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
# what a client of protocol 2025-06-18 sends (the TypeScript SDK opens this stream after
# initializing, and takes a 405 as "no stream here")
SSE = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_only_post_is_served(workspace: Workspace, mcp_app: Litestar, method: str) -> None:
    async def run() -> tuple[Any, Any]:
        headers = {**SSE, "Authorization": f"Bearer {workspace.reader}"}
        async with mcp_app.lifespan(), http(mcp_app, headers) as client:
            answer = await asyncio.wait_for(client.request(method, "/mcp"), 10)
            refused = await asyncio.wait_for(client.request(
                method, "/mcp", headers={"Authorization": "Bearer nonsense"}), 10)
            return answer, refused

    answer, refused = asyncio.run(run())
    assert answer.status_code == 405, answer.text
    assert answer.headers["Allow"] == "POST"
    assert answer.json()["error"]["message"].startswith("Method Not Allowed")
    assert refused.status_code == 401  # admission first: the method tells nothing
    # and the endpoint still serves its POSTs
    async def listing() -> list[str]:
        async with mcp_app.lifespan(), connected(mcp_app, workspace.reader) as client:
            return [t.name for t in (await client.list_tools()).tools]
    assert "context_pack" in asyncio.run(listing())


def test_a_body_past_the_limit_is_refused_as_such(workspace: Workspace,
                                                  mcp_app: Litestar) -> None:
    """A POST larger than the API's one body limit is answered as too large (a JSON-RPC error,
    400), whether its length is declared or it arrives in chunks; one within the limit is
    served, and a refused credential is refused first."""
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/list",
            "params": {"padding": "x" * (MAX_BODY + 10)}}
    oversized = json.dumps(call).encode()

    async def chunks() -> AsyncIterator[bytes]:
        for at in range(0, len(oversized), 65536):
            yield oversized[at:at + 65536]

    async def run() -> list[Any]:
        headers = {"Accept": "application/json, text/event-stream",
                   "Content-Type": "application/json",
                   "Authorization": f"Bearer {workspace.reader}"}
        async with mcp_app.lifespan(), http(mcp_app, headers) as client:
            declared = await client.post("/mcp", content=oversized)
            chunked = await client.post("/mcp", content=chunks())
            refused = await client.post("/mcp", content=oversized,
                                        headers={"Authorization": "Bearer nonsense"})
            small = await client.post("/mcp", content=json.dumps(
                {**call, "params": {}}).encode())
            return [declared, chunked, refused, small]

    declared, chunked, refused, small = asyncio.run(run())
    for answer in (declared, chunked):
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"]["message"].startswith("request body too large")
        assert answer.json()["id"] is None
    assert refused.status_code == 401
    assert small.status_code == 200, small.text
    assert "context_pack" in [t["name"] for t in small.json()["result"]["tools"]]
