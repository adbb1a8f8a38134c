"""The stdio MCP server behind ``contextctl mcp``: tools listed by the service's own ``/mcp``
for the credential, each call sent to its agent route through ``context_service.client``.
Imported only when ``contextctl mcp`` runs: the MCP SDK is most of the CLI's import time."""

from __future__ import annotations

import importlib.metadata
import math
from typing import Any

import httpx
import mcp_types as types
import msgspec
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp_types.version import LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from context_service.client import ApiError, AsyncClient
from context_service.client.errors import error_of, unreachable
from context_service.contract import agent as c
from context_service.contract import tools as catalogue

# the listing asked of the service's stateless /mcp: one POST, one JSON answer
_LISTING = msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
_MCP_HEADERS = {"Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION}
REDACTED = "[redacted]"  # a secret's place in an error text


class Bridge:
    """The service at ``url`` seen with one agent credential."""

    def __init__(self, url: str, token: str, headers: dict[str, str]) -> None:
        self.url = url
        self.client = AsyncClient(url, token, headers=headers)
        # what no error text may carry: a transport's message can quote a header it refused
        self.secrets = tuple(sorted({token, *headers.values()} - {""}, key=len, reverse=True))

    async def list_tools(self, _: ServerRequestContext[Any, Any],
                         __: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        """The service's own listing for the credential; a refusal (a credential not valid, a
        service not reached) is a JSON-RPC error saying so, as ``CODE: message``."""
        try:
            response = await self.client.http.post(
                "/mcp", content=_LISTING, headers={**self.client.headers, **_MCP_HEADERS})
        except httpx.TransportError as exc:
            raise self._refused(unreachable(exc)) from exc
        if not response.is_success:
            raise self._refused(error_of(response, response.content))
        try:
            answer = msgspec.json.decode(response.content)
            if "error" in answer:  # a JSON-RPC error of the service's: passed on as it is
                raise MCPError.from_error_data(types.ErrorData.model_validate(answer["error"]))
            return types.ListToolsResult.model_validate(answer["result"])
        except (msgspec.DecodeError, ValidationError, KeyError, TypeError) as exc:
            raise MCPError(types.INTERNAL_ERROR, "the service's tool listing could not be "
                           f"read: {exc}") from exc

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
            return catalogue.failure(self._body_of(exc), wait)
        # only the tool's declared answer (what its output schema says) is its result: a
        # proxy's page or another version's shape is a tool error, not a result that breaks
        # the agent's client (or its reading of a pack)
        try:
            msgspec.json.decode(body, type=tool.answer)
        except msgspec.DecodeError as exc:  # msgspec's ValidationError is one
            return catalogue.failure(c.ErrorBody(
                code="INTERNAL_ERROR",
                message=f"the service's answer could not be read as {tool.name}'s: {exc}"))
        return catalogue.success(tool, body)

    def _body_of(self, exc: ApiError) -> c.ErrorBody:
        """The error body the client's error carries, its message without a secret."""
        message = exc.message
        for secret in self.secrets:
            message = message.replace(secret, REDACTED)
        return c.ErrorBody(code=exc.code, message=message,
                           details=msgspec.UNSET if exc.details is None else exc.details)

    def _refused(self, exc: ApiError) -> MCPError:
        """A listing the service refused (or could not answer) as a JSON-RPC error: ``CODE:
        message``, the error body as its data, and when to try again where the answer said."""
        body = self._body_of(exc)
        message = f"{body.code}: {body.message}"
        if exc.retry_after is not None and (
                note := catalogue.retry_note(body.message, math.ceil(exc.retry_after))):
            message += "; " + note
        return MCPError(types.INTERNAL_ERROR, message, msgspec.to_builtins(body))

    def server(self) -> Server[Any]:
        return Server("context-service", version=_version(), title="Context Service",
                      instructions=catalogue.INSTRUCTIONS, on_list_tools=self.list_tools,
                      on_call_tool=self.call_tool, get_tool_input_schema=catalogue.input_schema)


def _version() -> str:
    """This installation's version (the bridge's ``serverInfo.version``)."""
    try:
        return importlib.metadata.version("context-service")
    except importlib.metadata.PackageNotFoundError:  # run from a checkout not installed
        return "0+unknown"


async def serve(bridge: Bridge) -> None:
    server = bridge.server()
    try:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    finally:
        await bridge.client.aclose()
