"""``contextctl mcp`` on its stdio before and around the handshake: a request other than
``ping`` before ``initialize`` is refused in words that say so (the SDK's code, which the MCP
specification does not replace, with a message naming the missing handshake), while one whose
method no server has stays "method not found"; and ``initialize`` inside a 2025-03-26 batch,
which that specification forbids, is refused as an invalid request, the rest of the batch
answered."""

from __future__ import annotations

import json

from tests.contextctl.test_mcp_bridge_protocol_stdio import Stdio
from tests.contextctl.test_mcp_bridge_protocol_stdio import bridge as bridge  # the fixture

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
INITIALIZE = {"jsonrpc": "2.0", "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {},
    "clientInfo": {"name": "agent", "version": "1"}}}


def test_a_request_before_initialize_is_told_to_initialize_first(bridge: Stdio) -> None:
    (listing,) = bridge.ask('{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert listing["id"] == 1 and "result" not in listing, listing
    assert listing["error"]["code"] == INVALID_PARAMS, listing
    message = listing["error"]["message"]
    assert "not initialized" in message and "initialize" in message.split("not")[-1], message
    (unknown,) = bridge.ask('{"jsonrpc":"2.0","id":2,"method":"no/such_method"}')
    assert unknown["error"]["code"] == METHOD_NOT_FOUND, unknown


def test_after_initialize_a_bad_request_keeps_its_own_error(bridge: Stdio) -> None:
    """Once the session is initialised the rewording stops: a ``tools/call`` without a name is
    the schema's refusal, not a call to initialize again."""
    assert "result" in bridge.initialize("2025-11-25")
    (call,) = bridge.ask('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}')
    assert call["error"]["code"] == INVALID_PARAMS, call
    assert "not initialized" not in call["error"]["message"], call


def test_a_malformed_initialize_is_not_told_to_initialize(bridge: Stdio) -> None:
    (answer,) = bridge.ask('{"jsonrpc":"2.0","id":4,"method":"initialize","params":{}}')
    assert "result" not in answer and "not initialized" not in answer["error"]["message"], answer


def test_initialize_in_a_batch_is_an_invalid_request(bridge: Stdio) -> None:
    """2025-03-26: "the initialize request MUST NOT be part of a JSON-RPC batch": that member is
    refused (its id answered, nothing renegotiated); the others are answered as usual."""
    assert bridge.initialize("2025-03-26")["result"]["protocolVersion"] == "2025-03-26"
    (answers,) = bridge.ask(json.dumps([
        {**INITIALIZE, "id": "again", "params": {**INITIALIZE["params"],
                                                  "protocolVersion": "2025-11-25"}},
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}]))
    by_id = {json.dumps(a["id"]): a for a in answers}
    assert set(by_id) == {'"again"', "1"}, answers
    refusal = by_id['"again"']
    assert "result" not in refusal and refusal["error"]["code"] == INVALID_REQUEST, refusal
    assert "batch" in refusal["error"]["message"], refusal
    assert by_id["1"]["result"] == {}
    # the session still speaks 2025-03-26: a batch is still answered as one
    (again,) = bridge.ask('[{"jsonrpc":"2.0","id":2,"method":"ping"}]')
    assert again == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
