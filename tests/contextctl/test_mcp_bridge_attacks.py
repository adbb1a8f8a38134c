"""``contextctl mcp``'s bridge attacked without a service (httpx's mock transport, or a socket
that only listens, stands in for it): an answer that is not the tool's (not JSON, not an object,
not of the declared answer type) is a tool error, never a JSON-RPC error or a result its own
output schema refuses; a credential that cannot be a header value is refused at start, and is
never echoed in any error text."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import jsonschema
import mcp_types as types
import pytest
from mcp import MCPError

from context_service.client import AsyncClient
from context_service.contextctl.mcp_bridge import Bridge
from context_service.contract import tools as catalogue

BASE = "http://cs.example"
SECRET = "bdk_0123456789abcdef_" + "S" * 43
COMMAND = (sys.executable, "-m", "context_service.contextctl", "mcp")


def _bridge(handle: Callable[[httpx.Request], httpx.Response]) -> Bridge:
    bridge = Bridge(BASE, SECRET, {})
    bridge.client = AsyncClient(token=SECRET, http=httpx.AsyncClient(
        base_url=BASE, transport=httpx.MockTransport(handle)))
    return bridge


def _call(bridge: Bridge, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    async def run() -> types.CallToolResult:
        try:
            return await bridge.call_tool(
                None, types.CallToolRequestParams(name=name, arguments=arguments))  # type: ignore[arg-type]
        finally:
            await bridge.client.aclose()
    return asyncio.run(run())


@pytest.mark.parametrize(("tool", "answer"), [
    ("list_context_sets", httpx.Response(200, text="<html>sign in to the proxy</html>")),
    ("list_context_sets", httpx.Response(200, json=[1, 2])),
    ("context_pack", httpx.Response(200, json={"packId": "pk_1"})),  # not a pack
    ("lookup_definitions", httpx.Response(200, json={"items": "none"})),
])
def test_an_answer_that_is_not_the_tools_is_a_tool_error(tool: str,
                                                         answer: httpx.Response) -> None:
    """A proxy's page, or a service of another version, answering 200: the agent gets a tool
    error saying the answer could not be read, not a JSON-RPC error with a parser's message nor
    a result that its client's check against the output schema would refuse."""
    result = _call(_bridge(lambda _: answer), tool, {"task": "t", "term": "t"})
    assert result.is_error, result
    error = result.structured_content
    assert error is not None and error["code"] == "INTERNAL_ERROR", error
    assert error["message"].startswith("the service's answer could not be read")


def test_an_answer_of_the_tool_passes_its_output_schema() -> None:
    """And a real answer of the declared type still goes through as it came."""
    body = {"items": [{"contextSetId": "finance", "term": "CFO", "definition": "The chief.",
                       "match": "exact_term", "score": 1.0}]}
    tool = catalogue.BY_NAME["lookup_definitions"]
    result = _call(_bridge(lambda _: httpx.Response(200, json=body)), tool.name, {"term": "t"})
    assert not result.is_error and result.structured_content == body, result.content
    jsonschema.validate(result.structured_content, catalogue.output_schema(tool.answer))


@pytest.fixture
def listening() -> Iterator[str]:
    """An address that accepts connections and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize(("setting", "value"), [
    ("CS_AGENT_TOKEN", SECRET + "\r\nX-Injected: 1"), ("CS_AGENT_TOKEN", SECRET + "\nmore"),
    ("CS_AGENT_TOKEN", SECRET[:-20] + "é" * 20), ("CS_TOKEN", "gateway-" + "S" * 20 + "\nx"),
])
def test_a_secret_no_header_can_carry_is_refused_unechoed(listening: str, setting: str,
                                                          value: str) -> None:
    """A credential with a line break inside (an environment file's value run into the next)
    failed at the first call with httpx's ``Illegal header value b'Bearer bdk_…'``: the secret
    itself, in the tool error the model reads and in the listing's JSON-RPC error. It is refused
    at start (a usage error, exit 2) naming the setting, never its value."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    env.update(CS_URL=listening, CS_AGENT_TOKEN=SECRET)
    env[setting] = value
    done = subprocess.run(COMMAND, env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 2, done.stderr
    assert setting in done.stderr, done.stderr
    said = done.stderr + done.stdout
    assert "S" * 12 not in said and "é" * 12 not in said, said  # no part of a secret


def test_no_error_of_the_bridge_names_the_credential(listening: str) -> None:
    """Whatever the transport says (its messages may quote what was sent), the bridge's tool
    errors and listing errors never carry the credential."""

    def leaky(request: httpx.Request) -> httpx.Response:
        raise httpx.LocalProtocolError(f"refused {request.headers['Authorization']!r}")

    result = _call(_bridge(leaky), "list_context_sets", {})
    assert result.is_error and SECRET not in str(result.model_dump())
    bridge = _bridge(leaky)

    async def listing() -> None:
        try:
            await bridge.list_tools(None, None)  # type: ignore[arg-type]
        finally:
            await bridge.client.aclose()

    with pytest.raises(MCPError) as refused:
        asyncio.run(listing())
    assert SECRET not in refused.value.message and SECRET not in str(refused.value.error.data)


def test_a_value_json_cannot_carry_is_refused_before_sending() -> None:
    """The stdio transport parses ``NaN`` (and numbers beyond every double) as non-finite
    floats, which the client would send as ``null``: the call is refused, nothing is sent."""
    sent: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    result = _call(_bridge(handle), "context_pack",
                   {"task": "t", "budget": {"maxTokens": float("nan")}})
    assert result.is_error and sent == []
    assert result.structured_content == {
        "code": "INVALID_REQUEST", "message": "malformed JSON arguments: $.budget.maxTokens is "
        "not a finite number (NaN, Infinity, or beyond every double)"}
