"""The stdio MCP server behind ``contextctl mcp``: tools listed by the service's own ``/mcp``
for the credential, each call sent to its agent route through ``context_service.client``.
Imported only when ``contextctl mcp`` runs: the MCP SDK is most of the CLI's import time."""

from __future__ import annotations

import math
from typing import Any

import httpx2
import mcp_types as types
import msgspec
from mcp import Client as McpClient
from mcp.client.streamable_http import streamable_http_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from context_service.client import ApiError, AsyncClient
from context_service.contract import agent as c
from context_service.contract import tools as catalogue


class Bridge:
    """The service at ``url`` seen with one agent credential."""

    def __init__(self, url: str, token: str, headers: dict[str, str]) -> None:
        self.url = url
        self.headers = {**headers, "Authorization": f"Bearer {token}"}
        self.client = AsyncClient(url, token, headers=headers)

    async def list_tools(self, _: ServerRequestContext[Any, Any],
                         __: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        async with httpx2.AsyncClient(headers=self.headers, timeout=60) as http, McpClient(
                streamable_http_client(self.url + "/mcp", http_client=http)) as remote:
            return await remote.list_tools()

    async def call_tool(self, _: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        resolved = catalogue.resolve(params)
        if isinstance(resolved, types.CallToolResult):
            return resolved
        tool, path, arguments = resolved
        try:
            body = await self.client.call(path, arguments)
        except ApiError as exc:
            wait = None if exc.retry_after is None else str(math.ceil(exc.retry_after))
            return catalogue.failure(c.ErrorBody(
                code=exc.code, message=exc.message,
                details=msgspec.UNSET if exc.details is None else exc.details), wait)
        return catalogue.success(tool, body)

    def server(self) -> Server[Any]:
        return Server("context-service", title="Context Service",
                      instructions=catalogue.INSTRUCTIONS, on_list_tools=self.list_tools,
                      on_call_tool=self.call_tool, get_tool_input_schema=catalogue.input_schema)


async def serve(bridge: Bridge) -> None:
    server = bridge.server()
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await bridge.client.aclose()
