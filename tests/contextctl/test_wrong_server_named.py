"""A ``CS_URL`` naming some other web server: what it answers on the service's paths is
mostly a refusal (``404 File not found`` of a static file server, ``501 Unsupported method``
for a POST), an HTML page, not the service's JSON. The message then says where the answer came
from and which setting names it, for ``contextctl``'s commands as for ``contextctl mcp``'s
tool calls; a refusal in the service's own JSON is still the service's message."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import mcp_types as types
import pytest

from context_service.contextctl.client import Client, ServiceError
from context_service.contextctl.mcp_bridge import Bridge
from context_service.contextctl.settings import Settings

OTHER = "http://other.example:8000"
PAGE = "<!DOCTYPE HTML><html><body><h1>Error response</h1></body></html>"


def _page(status: int) -> httpx.MockTransport:
    return httpx.MockTransport(lambda _: httpx.Response(
        status, text=PAGE, headers={"Content-Type": "text/html;charset=utf-8"}))


@pytest.mark.parametrize("status", [404, 501])
def test_a_command_answered_by_another_web_server_names_cs_url(status: int) -> None:
    client = Client(Settings.from_env({"CS_URL": "http://walrus:hunter2@other.example:8000",
                                       "CS_SUBJECT": "user:alice"}), _page(status))
    with pytest.raises(ServiceError) as caught:
        client.get("/v1/namespaces/default/contexts/docs/audit")
    said = str(caught.value)
    assert "http://***@other.example:8000" in said and "CS_URL" in said, said
    assert str(status) in said and "hunter2" not in said, said
    assert caught.value.status == status


def test_a_refusal_in_the_services_json_is_the_services_message() -> None:
    refusal = httpx.MockTransport(lambda _: httpx.Response(
        404, json={"error": "not_found", "message": "context resource not found"}))
    client = Client(Settings.from_env({"CS_URL": OTHER, "CS_SUBJECT": "user:alice"}), refusal)
    with pytest.raises(ServiceError) as caught:
        client.get("/v1/namespaces/default/contexts/docs/audit")
    assert str(caught.value) == "context resource not found"


def _tool_call(status: int, tool: str) -> dict[str, Any]:
    """A tool call of ``contextctl mcp`` whose service is another web server."""
    bridge = Bridge(OTHER, "bdk_0123456789abcdef_" + "S" * 43, {})
    bridge.client.http = httpx.AsyncClient(base_url=OTHER, transport=_page(status))

    async def run() -> types.CallToolResult:
        try:
            return await bridge.call_tool(None, types.CallToolRequestParams(  # type: ignore[arg-type]
                name=tool, arguments={"task": "walrus"}))
        finally:
            await bridge.client.http.aclose()
    called = asyncio.run(run())
    assert called.is_error and called.structured_content is not None
    return dict(called.structured_content)


@pytest.mark.parametrize("tool", ["context_pack", "a_newer_tool"])
@pytest.mark.parametrize("status", [404, 501])
def test_a_tool_call_answered_by_another_web_server_names_cs_url(status: int,
                                                                  tool: str) -> None:
    error = _tool_call(status, tool)
    assert error["code"] == "HTTP_ERROR", error
    assert str(status) in error["message"], error
    assert error["message"].endswith(f"; the service's address: {OTHER} (CS_URL)"), error
