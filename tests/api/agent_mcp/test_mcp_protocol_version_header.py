"""``/mcp`` and an ``MCP-Protocol-Version`` header naming a version it does not speak: the
transport's required ``400`` (2025-06-18 on: "an invalid or unsupported MCP-Protocol-Version"),
in words that say the version is not supported and which ones are, whatever the body is (a
handshake client's request, which carries no per-request envelope, a notification, a batch);
a supported header is answered as before."""

from __future__ import annotations

import json

import pytest
from litestar import Litestar

from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import JSON_ONLY, Workspace, post_all
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
SUPPORTED = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
UNSUPPORTED_PROTOCOL_VERSION = -32022  # what the SDK answers an unsupported version with


@pytest.mark.parametrize("version", ["1999-01-01", "2025-13-01", "latest"])
def test_an_unknown_version_is_refused_as_not_supported(
        workspace: Workspace, mcp_app: Litestar, version: str) -> None:
    headers = {**JSON_ONLY, "MCP-Protocol-Version": version}
    bodies = [b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}',
              b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
              b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]']
    request, notification, batch = post_all(mcp_app, workspace.reader,
                                         [(body, headers) for body in bodies])
    for answer in (request, notification, batch):
        assert answer.status_code == 400, answer.text
        message = answer.json()
        error = message["error"]
        assert "result" not in message and error["code"] == UNSUPPORTED_PROTOCOL_VERSION, message
        assert "_meta" not in error["message"] and "not supported" in error["message"], error
        assert all(known in error["message"] for known in SUPPORTED), error
        assert error["data"] == {"supported": SUPPORTED, "requested": version}, error
    assert request.json()["id"] == 7 and notification.json()["id"] is None


def test_a_supported_version_is_answered_as_before(workspace: Workspace,
                                                   mcp_app: Litestar) -> None:
    (answer,) = post_all(mcp_app, workspace.reader, [(
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        {**JSON_ONLY, "MCP-Protocol-Version": "2025-06-18"})])
    assert answer.status_code == 200 and json.loads(answer.text)["result"] == {}
