"""The MCP server of the endpoint: the tools the admitted credential may call, each answered
by its agent route (``dispatch``), with the agent API's errors as tool errors."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from context_service.contract import tools as catalogue
from context_service.domain.agent_credentials.state import Credential
from context_service.http.mcp.dispatch import call_route
from context_service.http.mcp.gate import CREDENTIAL


def _scope_of(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    request = ctx.request
    assert request is not None, "the endpoint serves HTTP only"
    scope: dict[str, Any] = request.scope
    return scope


async def list_tools(ctx: ServerRequestContext[Any, Any],
                     _: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    credential: Credential = _scope_of(ctx)[CREDENTIAL]
    return types.ListToolsResult(tools=catalogue.listed(credential.scopes,
                                                        credential.context_set_id))


async def call_tool(ctx: ServerRequestContext[Any, Any],
                    params: types.CallToolRequestParams) -> types.CallToolResult:
    resolved = catalogue.resolve(params)
    if isinstance(resolved, types.CallToolResult):
        return resolved
    tool, path, arguments = resolved
    answer = await call_route(_scope_of(ctx), path, arguments)
    if answer.status == 200:
        return catalogue.success(tool, answer.body)
    return catalogue.failure(catalogue.error_of(answer.status, answer.body), answer.retry_after)


def server(version: str) -> Server[Any]:
    return Server("context-service", version=version, title="Context Service",
                  instructions=catalogue.INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool, get_tool_input_schema=catalogue.input_schema)
