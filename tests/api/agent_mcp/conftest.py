"""Fixtures of the MCP tests: the seeded workspace and a second application over the same
services whose lifespan (the MCP session manager) each test runs in its own event loop."""

from __future__ import annotations

import pytest
from litestar import Litestar

from context_service import bootstrap
from context_service.http.app import create_app
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.agent_mcp.mcp_support import Workspace
from tests.api.conftest import Api


@pytest.fixture
def workspace(api: Api) -> Workspace:
    return Workspace(api)


@pytest.fixture
def mcp_app(container: bootstrap.Container) -> Litestar:
    return create_app(bootstrap.services(container))
