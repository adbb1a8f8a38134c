"""``/mcp`` and an ``initialize`` inside a batch of protocol 2025-03-26, which that specification
forbids ("the initialize request MUST NOT be part of a JSON-RPC batch"): the member is not run
but answered with ``-32600`` under its own id, saying so, the rest of the batch as usual; sent
as a notification it gets no answer. Over stdio ``contextctl mcp`` answers the same."""

from __future__ import annotations

import json

import pytest
from litestar import Litestar

from context_service.contract.mcp_batches import INITIALIZE_IN_BATCH
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import JSON_ONLY, Workspace, post_all
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
BATCHING = {**JSON_ONLY, "MCP-Protocol-Version": "2025-03-26"}
INITIALIZE = {"protocolVersion": "2025-03-26", "capabilities": {},
              "clientInfo": {"name": "batcher", "version": "1"}}


def test_an_initialize_in_a_batch_is_refused_under_its_id_and_the_rest_answered(
        workspace: Workspace, mcp_app: Litestar) -> None:
    batch = json.dumps([
        {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": INITIALIZE},
        {"jsonrpc": "2.0", "id": "p", "method": "ping"},
        {"jsonrpc": "2.0", "method": "initialize", "params": INITIALIZE}]).encode()
    (answer,) = post_all(mcp_app, workspace.reader, [(batch, BATCHING)])
    assert answer.status_code == 200, answer.text
    answers = {a["id"]: a for a in answer.json()}
    assert set(answers) == {"init", "p"}, answers  # the notification gets none
    assert answers["p"]["result"] == {}
    refused = answers["init"]
    assert "result" not in refused, refused
    assert refused["error"] == {"code": -32600, "message": INITIALIZE_IN_BATCH}


def test_an_initialize_alone_is_answered_as_before(workspace: Workspace,
                                                   mcp_app: Litestar) -> None:
    alone = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                        "params": INITIALIZE}).encode()
    (answer,) = post_all(mcp_app, workspace.reader, [(alone, BATCHING)])
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["protocolVersion"] == "2025-03-26"
