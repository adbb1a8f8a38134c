"""The endpoint starts the SDK on demand: importing and building the application loads none of
it; a refused request leaves it unloaded; the first admitted requests, however many arrive at
once, share one session manager, which stops with the application; the next start of the
application gets a manager of its own.

One service and one seeded workspace for the module (read only here); each test's ``mcp_app`` is
an application of its own over that service."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from litestar import Litestar

from context_service.http.mcp.endpoint import McpEndpoint
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import (
    Workspace,
    http,
)
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture
from tests.support.fresh import loaded_packages

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}


def test_building_the_application_loads_no_mcp_sdk() -> None:
    probe = loaded_packages(
        "from context_service.http.app import create_app\n"
        "from context_service.http.mcp.endpoint import McpEndpoint\n"
        "McpEndpoint()", ("mcp", "mcp_types"))
    assert probe.imported == []


def test_concurrent_first_requests_share_one_manager_that_stops_with_the_application(
        workspace: Workspace, mcp_app: Litestar) -> None:
    endpoint: McpEndpoint = mcp_app.state.mcp
    bearer = {**HEADERS, "Authorization": f"Bearer {workspace.reader}"}

    async def start_of_the_application() -> Any:
        async with mcp_app.lifespan(), http(mcp_app, bearer) as client:
            running = endpoint.running
            assert running is not None and running.sessions is None
            refused = await client.post("/mcp", json=LIST, headers={"Authorization": "Bearer x"})
            assert refused.status_code == 401
            assert running.sessions is None and not running.wanted.is_set()
            answers = await asyncio.gather(*(client.post("/mcp", json={**LIST, "id": i})
                                             for i in range(6)))
            assert [a.status_code for a in answers] == [200] * 6, [a.text for a in answers]
            assert [a.json()["id"] for a in answers] == list(range(6))
            assert all(a.json()["result"]["tools"] for a in answers)
            manager = running.sessions
            assert manager is not None
            again = await client.post("/mcp", json=LIST)
            assert again.status_code == 200 and running.sessions is manager
        assert endpoint.running is None
        return manager

    first = asyncio.run(start_of_the_application())
    second = asyncio.run(start_of_the_application())
    assert second is not first


def test_an_application_never_asked_stops_without_the_sdk(mcp_app: Litestar) -> None:
    endpoint: McpEndpoint = mcp_app.state.mcp

    async def start_and_stop() -> bool:
        async with mcp_app.lifespan():
            running = endpoint.running
            assert running is not None
        return running.wanted.is_set() or running.sessions is not None

    assert asyncio.run(start_and_stop()) is False
    assert endpoint.running is None
