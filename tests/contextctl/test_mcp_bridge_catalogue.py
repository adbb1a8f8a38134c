"""``contextctl mcp``'s bridge serves the tools the service lists, not the ones it was built
with: against a served process, a tool the service lists but the bridge's own catalogue lacks
(a service newer than this contextctl) is listed and answered as the service answers it, a tool
only the bridge knows (one the service no longer offers) is not listed, and a service not there
at start leaves the bridge's own catalogue listed, said once on stderr."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from context_service.contextctl.mcp_bridge import Bridge
from context_service.contract import agent as c
from context_service.contract import tools as catalogue
from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
WORKSPACE = "bridge-catalogue"
ADMIN = "service:context-service-admin"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
MCP_HEADERS = {"Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}
ARR = {"term": "ARR", "definition": "Annual recurring revenue.",
       "aliases": ["annual recurring revenue"]}
# a tool of an older service, still in this contextctl's catalogue, no longer on the service
RETIRED = catalogue.AgentTool(
    "summarise_notes", "Summarise notes", "A summary of a collection's notes.",
    f"{catalogue.API}/notes/summarise", catalogue.READ, c.ListFieldsRequest, c.FieldListing,
    read_only=True)


@pytest.fixture(scope="module")
def bearer(service: ServerProcess) -> str:
    """An agent credential of a workspace of this module's own, whose one context set defines
    ARR."""
    with httpx.Client(base_url=service.url, timeout=30) as http:
        as_admin, as_alice = {"X-Context-Subject": ADMIN}, {"X-Context-Subject": "user:alice"}
        owner = {"subject": {"kind": "user", "name": "alice"}, "role": "owner"}
        done = http.put(f"/v1/namespaces/{WORKSPACE}/members", json=owner, headers=as_admin)
        assert done.status_code == 200, done.text
        finance = {"id": "finance", "name": "Finance", "collections": ["reports"],
                   "definitions": [ARR]}
        done = http.post(f"/v1/namespaces/{WORKSPACE}/context-sets", json=finance,
                         headers=as_alice)
        assert done.status_code == 201, done.text
        done = http.post(f"/api/w/{WORKSPACE}/agent-credentials", headers=as_alice, json={
            "name": "agent", "scopes": ["context:read"], "expiresInDays": 30})
        assert done.status_code == 201, done.text
        token: str = done.json()["token"]
        return token


def _catalogue(monkeypatch: pytest.MonkeyPatch, tools: tuple[catalogue.AgentTool, ...]) -> None:
    """The bridge's own catalogue made ``tools``: as a contextctl of another version has it."""
    monkeypatch.setattr(catalogue, "TOOLS", tools)
    monkeypatch.setattr(catalogue, "BY_NAME", {tool.name: tool for tool in tools})


def _services(service: ServerProcess, bearer: str, method: str,
              params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The result the service's own ``/mcp`` answers ``method`` with."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": method}
    if params is not None:
        message["params"] = params
    with httpx.Client(base_url=service.url, timeout=30) as http:
        answer = http.post("/mcp", json=message, headers={
            **MCP_HEADERS, "Authorization": f"Bearer {bearer}"})
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


def _through_bridge(service: ServerProcess, bearer: str, tool: str,
                    arguments: dict[str, Any]) -> tuple[list[types.Tool], types.CallToolResult]:
    """The bridge's listing and its answer to one call, driven by the SDK's client in-process."""
    async def run() -> tuple[list[types.Tool], types.CallToolResult]:
        bridge = Bridge(service.url, bearer, {})
        try:
            async with Client(bridge.server()) as client:
                listed = (await client.list_tools()).tools
                return listed, await client.call_tool(tool, arguments)
        finally:
            await bridge.client.aclose()
    return asyncio.run(run())


def _dump(model: types.Tool | types.CallToolResult) -> dict[str, Any]:
    """``model`` as JSON, without the ``serverInfo`` the SDK's server adds to the results it
    sends in-process (the bridge's name and version: not the service's answer)."""
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    meta = {k: v for k, v in dumped.pop("_meta", {}).items() if k != SERVER_INFO}
    return {**dumped, **({"_meta": meta} if meta else {})}


def test_a_tool_only_the_service_knows_is_listed_and_answered(
        service: ServerProcess, bearer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service newer than this contextctl: its tool ``lookup_definitions`` is missing from the
    bridge's catalogue. It is listed as the service lists it, and a call of it is the service's
    own answer to that call (it was the bridge's ``NOT_FOUND: tool ... not found``)."""
    _catalogue(monkeypatch, tuple(t for t in catalogue.TOOLS if t.name != "lookup_definitions"))
    arguments = {"term": "annual recurring revenue"}
    listed, called = _through_bridge(service, bearer, "lookup_definitions", arguments)

    services = _services(service, bearer, "tools/list")["tools"]
    lookup = next(t for t in services if t["name"] == "lookup_definitions")
    assert [_dump(t) for t in listed if t.name == "lookup_definitions"] == [
        _dump(types.Tool.model_validate(lookup))]
    assert not called.is_error, called.content
    answer = _services(service, bearer, "tools/call",
                       {"name": "lookup_definitions", "arguments": arguments})
    assert _dump(called) == _dump(types.CallToolResult.model_validate(answer))
    assert called.structured_content is not None
    assert called.structured_content["items"][0]["term"] == "ARR"


def test_a_tool_the_service_refuses_comes_back_as_its_tool_error(
        service: ServerProcess, bearer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forwarded call the service's tool refuses (a blank term): the service's tool error as
    it is, not one of the bridge's."""
    _catalogue(monkeypatch, tuple(t for t in catalogue.TOOLS if t.name != "lookup_definitions"))
    _, called = _through_bridge(service, bearer, "lookup_definitions", {"term": " "})
    answer = _services(service, bearer, "tools/call",
                       {"name": "lookup_definitions", "arguments": {"term": " "}})
    assert called.is_error and _dump(called) == _dump(types.CallToolResult.model_validate(answer))
    assert called.structured_content is not None
    assert called.structured_content["code"] == "VALIDATION_ERROR"


def test_a_tool_only_the_bridge_knows_is_not_listed(
        service: ServerProcess, bearer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool the service no longer offers, still in this contextctl's catalogue: the listing is
    the service's, tool for tool (name, description, schemas), without it."""
    _catalogue(monkeypatch, (*catalogue.TOOLS, RETIRED))
    listed, _ = _through_bridge(service, bearer, "list_context_sets", {})
    services = _services(service, bearer, "tools/list")["tools"]
    assert RETIRED.name not in {t.name for t in listed}
    assert [_dump(t) for t in listed] == [_dump(types.Tool.model_validate(t)) for t in services]


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[Any]:
    with (tmp_path / "stderr").open("w+") as file:
        yield file


def test_a_service_not_there_at_start_leaves_the_own_catalogue_listed(errlog: Any) -> None:
    """``contextctl mcp`` launched with nothing at ``CS_URL``: the tools listed are its own
    catalogue's (all of them: which the credential may call is the service's to say), and
    stderr says once, for any number of listings, that the service was not reached."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    env.update(CS_URL="http://127.0.0.1:9", CS_AGENT_TOKEN="bdk_0123456789abcdef_" + "A" * 43)
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "context_service.contextctl", "mcp"], env=env)

    async def run() -> list[list[str]]:
        async with Client(stdio_client(server, errlog=errlog)) as client:
            return [[t.name for t in (await client.list_tools()).tools] for _ in range(2)]

    listings = asyncio.run(asyncio.wait_for(run(), 60))
    assert listings == [[t.name for t in catalogue.TOOLS]] * 2
    errlog.seek(0)
    said = errlog.read().splitlines()
    assert len(said) == 1, said
    assert "not reached" in said[0] and "http://127.0.0.1:9" in said[0], said
    assert "A" * 12 not in said[0]  # no part of the credential


BASE = "http://cs.example"
SECRET = "bdk_0123456789abcdef_" + "S" * 43


def _forward(handle: Any, arguments: dict[str, Any]) -> types.CallToolResult:
    """A call of ``newer_tool`` (no tool of the bridge's catalogue), httpx's mock transport
    answering for the service."""
    bridge = Bridge(BASE, SECRET, {"X-SH-Auth": "gateway"})
    bridge.client.http = httpx.AsyncClient(base_url=BASE, transport=httpx.MockTransport(handle))

    async def run() -> types.CallToolResult:
        try:
            return await bridge.call_tool(None, types.CallToolRequestParams(  # type: ignore[arg-type]
                name="newer_tool", arguments=arguments))
        finally:
            await bridge.client.http.aclose()
    return asyncio.run(run())


def test_a_forwarded_call_is_the_services_tools_call_with_the_credential() -> None:
    sent: list[httpx.Request] = []
    result = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {},
              "isError": False}

    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": result})

    called = _forward(handle, {"q": "x"})
    assert _dump(called) == _dump(types.CallToolResult.model_validate(result))
    assert [r.url.path for r in sent] == ["/mcp"]
    assert sent[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert sent[0].headers["X-SH-Auth"] == "gateway"
    assert httpx.Response(200, content=sent[0].content).json() == {
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "newer_tool", "arguments": {"q": "x"}}}


@pytest.mark.parametrize(("answer", "code"), [
    (httpx.Response(200, text="<html>sign in to the proxy</html>"), "INTERNAL_ERROR"),
    (httpx.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {"content": "none"}}),
     "INTERNAL_ERROR"),
    (httpx.Response(401, json={"code": "UNAUTHORIZED", "message": "agent credential is not "
                               "valid"}), "UNAUTHORIZED"),
])
def test_a_forwarded_call_not_answered_as_one_is_a_tool_error(answer: httpx.Response,
                                                              code: str) -> None:
    """A proxy's page, a result that is no tool result, ``/mcp`` refusing the credential: a
    tool error with the code, as for the tools the bridge knows."""
    called = _forward(lambda _: answer, {})
    assert called.is_error and called.structured_content is not None
    assert called.structured_content["code"] == code, called.structured_content


def test_a_forwarded_call_names_no_credential_and_sends_no_nan() -> None:
    sent: list[httpx.Request] = []

    def leaky(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        raise httpx.LocalProtocolError(f"refused {request.headers['Authorization']!r}")

    called = _forward(leaky, {})
    assert called.is_error and SECRET not in str(called.model_dump()) and len(sent) == 1
    refused = _forward(leaky, {"limit": float("nan")})
    assert refused.is_error and len(sent) == 1  # nothing more sent
    assert refused.structured_content is not None
    assert refused.structured_content["code"] == "INVALID_REQUEST"
