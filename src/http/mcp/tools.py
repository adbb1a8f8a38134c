"""The MCP server of the endpoint: the tools the admitted credential may call, each answered
by its agent route (``dispatch``), with the agent API's errors as tool errors. What the
specification makes a protocol error is one: a tool no catalogue has, and a listing cursor
(the listing is one page, so no cursor is one this server gave) are ``-32602``."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from context_service.contract import tools as catalogue
from context_service.domain.agent_credentials.state import Credential
from context_service.domain.echoed import cut
from context_service.http.mcp.dispatch import call_route
from context_service.http.mcp.gate import CREDENTIAL


def _scope_of(ctx: ServerRequestContext[Any, Any]) -> dict[str, Any]:
    request = ctx.request
    assert request is not None, "the endpoint serves HTTP only"
    scope: dict[str, Any] = request.scope
    return scope


def unknown_tool(name: str) -> MCPError:
    """The protocol error of a call naming no tool of the catalogue (the specification's own
    example). A catalogue tool the credential's scopes leave unlisted is no unknown tool: its
    route refuses it (``FORBIDDEN``), as over HTTP."""
    return MCPError(types.INVALID_PARAMS, f"Unknown tool: {cut(name)}")  # cut (0059)


def invalid_cursor(cursor: str) -> MCPError:
    """"Invalid cursors SHOULD result in an error with code -32602": the whole listing again
    would hand a client walking pages the first page as if it were the next."""
    return MCPError(types.INVALID_PARAMS, "Invalid cursor: the tool listing is one page and "
                    "gives no cursor", {"cursor": cut(cursor)})


async def list_tools(ctx: ServerRequestContext[Any, Any],
                     params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    if params is not None and params.cursor is not None:
        raise invalid_cursor(params.cursor)
    credential: Credential = _scope_of(ctx)[CREDENTIAL]
    return types.ListToolsResult(tools=catalogue.listed(credential.scopes,
                                                        credential.context_set_id))


async def call_tool(ctx: ServerRequestContext[Any, Any],
                    params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name not in catalogue.BY_NAME:
        raise unknown_tool(params.name)
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
