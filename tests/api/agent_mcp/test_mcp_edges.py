"""Edges of ``/mcp`` as a client other than the SDK's may meet them: the stateless endpoint
offers no stream of server messages (``GET``) and no session to end (``DELETE``), so it says so
at once (405, ``Allow: POST``) instead of holding an empty event stream open."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from litestar import Litestar

from context_service import bootstrap
from context_service.http.app import create_app
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import Workspace, connected, http
from tests.api.conftest import Api

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
# what a client of protocol 2025-06-18 sends (the TypeScript SDK opens this stream after
# initializing, and takes a 405 as "no stream here")
SSE = {"Accept": "text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


@pytest.fixture(scope="module")
def workspace(module_api: Api) -> Workspace:
    return Workspace(module_api)


@pytest.fixture(scope="module")
def mcp_app(module_container: bootstrap.Container) -> Litestar:
    return create_app(bootstrap.services(module_container))


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
