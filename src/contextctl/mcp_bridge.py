"""The stdio MCP server behind ``contextctl mcp``: tools listed by the service's own ``/mcp``
for the credential (this contextctl's own catalogue while the service is not reached), each
call of a tool of that catalogue sent to its agent route through ``context_service.client``, a
call of any other tool (one of a newer service) sent as it is to the service's ``/mcp``.
Its stdio keeps JSON-RPC's framing rules the SDK's stdio transport drops (``mcp_framing``).
Imported only when ``contextctl mcp`` runs: the MCP SDK is most of the CLI's import time."""

from __future__ import annotations

import importlib.metadata
import io
import math
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
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
from context_service.contextctl.mcp_framing import Framing
from context_service.contextctl.mcp_stop import STOP_SIGNALS, Stdin, StopSignals
from context_service.contract import agent as c
from context_service.contract import tools as catalogue
from context_service.urls import redacted

# what is asked of the service's stateless /mcp: one POST, one JSON-RPC message, one JSON answer
_LISTING = msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
_MCP_HEADERS = {"Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": LATEST_HANDSHAKE_VERSION}
REDACTED = "[redacted]"  # a secret's place in an error text
# the service not reached at all (refused, no such host, no connection in time): a service that
# was reached but did not answer, or a request httpx would not send, stays an error
_NOT_REACHED = (httpx.ConnectError, httpx.ConnectTimeout)
# seconds a stopped session has to end on its own (its calls given up, its answers written)
# before it is cancelled, and the service's connections to close
STOP_WITHIN = 2.0
# seconds a connection to the service may take to be made; the client's timeout (a call's
# answer) is otherwise its own. A host that drops the connection (a firewall, an address
# gone) held each call four times this long (the client's tries), and the listing at start
# once, before the own catalogue was listed: at the client's 60 s that was four minutes a call
CONNECT_WITHIN = 5.0
TIMEOUT = 60.0
# what writing to a stdout the host is gone from raises: a pipe closed (EPIPE), a socket reset
# (ECONNRESET: a host that talked over a connection and dropped it, SO_LINGER 0 or a crash)
HOST_GONE = (BrokenPipeError, ConnectionResetError)


def _listing(cursor: str) -> bytes:
    """The ``tools/list`` of the page ``cursor`` names (a newer service may list in pages)."""
    return msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
                                "params": {"cursor": cursor}})


class Bridge:
    """The service at ``url`` seen with one agent credential."""

    def __init__(self, url: str, token: str, headers: dict[str, str]) -> None:
        self.url = url
        self.client = AsyncClient(url, token, headers=headers, timeout=TIMEOUT)
        self.client.http.timeout = httpx.Timeout(TIMEOUT, connect=CONNECT_WITHIN)
        # what no error text may carry: a transport's message can quote a header it refused
        self.secrets = tuple(sorted({token, *headers.values()} - {""}, key=len, reverse=True))
        # the service was not reached at the last listing, and stderr has said so
        self.unreached_said = False

    async def list_tools(self, _: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        """The service's own listing for the credential, the page the client asked for (its
        cursor is the service's); a refusal (a credential not valid, a rate limit) is a
        JSON-RPC error saying so, as ``CODE: message``. A service not reached leaves this
        contextctl's own catalogue listed, said once on stderr."""
        cursor = params.cursor if params is not None else None
        try:
            content = await self._ask(_LISTING if cursor is None else _listing(cursor))
        except ApiError as exc:
            # the own catalogue stands for a first listing only: a cursor names a page of the
            # service's, and the whole catalogue again would list the earlier pages' tools twice
            if isinstance(exc.__cause__, _NOT_REACHED) and cursor is None:
                return self._own_listing(exc)
            raise self._refused(exc) from exc
        self.unreached_said = False
        try:
            answer = msgspec.json.decode(content)
            if "error" in answer:  # a JSON-RPC error of the service's: passed on as it is
                raise MCPError.from_error_data(types.ErrorData.model_validate(answer["error"]))
            return types.ListToolsResult.model_validate(answer["result"])
        except (msgspec.DecodeError, ValidationError, KeyError, TypeError) as exc:
            raise MCPError(types.INTERNAL_ERROR, "the service's tool listing could not be "
                           f"read: {exc}") from exc

    def _own_listing(self, exc: ApiError) -> types.ListToolsResult:
        """Every tool of this contextctl's catalogue (which of them the credential may call is
        the service's to say, when it answers again): an agent started before its service still
        learns the tools; stderr says so once until a listing reaches the service."""
        if not self.unreached_said:
            self.unreached_said = True
            print(self._redacted(f"contextctl mcp: the service at {redacted(self.url)} was not "
                                 f"reached ({exc.message}); listing this contextctl's own "
                                 "tools"),
                  file=sys.stderr, flush=True)
        return types.ListToolsResult(tools=[tool.definition() for tool in catalogue.TOOLS])

    async def call_tool(self, _: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in catalogue.BY_NAME:  # a tool of a newer service: its own call
            return await self._forwarded(params)
        resolved = catalogue.resolve(params)
        if isinstance(resolved, types.CallToolResult):
            return resolved
        tool, path, arguments = resolved
        try:
            body = await self.client.call(path, arguments)
        except ApiError as exc:
            return self._failure(exc)
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

    async def _forwarded(self, params: types.CallToolRequestParams) -> types.CallToolResult:
        """A call of a tool this contextctl does not know, sent to the service's ``/mcp`` as
        the service's own ``tools/call``: its result (a tool error included) as the service
        gave it, a JSON-RPC error of the service's passed on as it is."""
        arguments = dict(params.arguments or {})
        if (refused := catalogue.not_json(arguments)) is not None:
            return catalogue.failure(refused)
        message = msgspec.json.encode({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": params.name, "arguments": arguments}})
        try:
            content = await self._ask(message)
        except ApiError as exc:
            return self._failure(exc)
        try:
            answer = msgspec.json.decode(content)
            if "error" in answer:
                raise MCPError.from_error_data(types.ErrorData.model_validate(answer["error"]))
            return types.CallToolResult.model_validate(answer["result"])
        except (msgspec.DecodeError, ValidationError, KeyError, TypeError) as exc:
            return catalogue.failure(c.ErrorBody(
                code="INTERNAL_ERROR",
                message=f"the service's answer could not be read as {params.name}'s: {exc}"))

    async def _ask(self, message: bytes) -> bytes:
        """The body of the service's ``/mcp`` answer to one JSON-RPC ``message``, with the
        client's credential, headers and timeouts; a service not reached (``UNREACHABLE``) or
        an answer not 2xx raises the client's ``ApiError``."""
        try:
            response = await self.client.http.post(
                "/mcp", content=message, headers={**self.client.headers, **_MCP_HEADERS})
        except httpx.TransportError as exc:
            raise unreachable(exc) from exc
        if not response.is_success:
            raise error_of(response, response.content)
        return response.content

    def _failure(self, exc: ApiError) -> types.CallToolResult:
        """A call the service refused (or could not answer) as a tool error, with when to try
        again where the answer said."""
        wait = None if exc.retry_after is None else str(math.ceil(exc.retry_after))
        return catalogue.failure(self._body_of(exc), wait)

    def _body_of(self, exc: ApiError) -> c.ErrorBody:
        """The error body the client's error carries, its message without a secret; a service
        not reached or not answering is named (which service, which setting to fix), and so is
        one whose answer is no error body of the API (``HTTP_ERROR``: another web server at
        ``CS_URL``, a proxy's page)."""
        message = exc.message
        if exc.code in ("UNREACHABLE", "HTTP_ERROR"):
            message += f"; the service's address: {redacted(self.url)} (CS_URL)"
        return c.ErrorBody(code=exc.code, message=self._redacted(message),
                           details=msgspec.UNSET if exc.details is None else exc.details)

    def _redacted(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

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


async def serve(bridge: Bridge, stop: StopSignals) -> None:
    """The session on stdio until the host ends it (``mcp_stop``): its input ended, stdout
    closed, SIGTERM or SIGINT (``stop`` saw those that came before the event loop took them)."""
    server = bridge.server()
    framing = Framing()
    stdin = Stdin(sys.stdin.fileno())
    try:
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals, stdin.text() as text:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_stopping, signals, stdin, tasks.cancel_scope)
                try:
                    if not stop.requested:
                        await _session(server, framing, stdin, text)
                finally:
                    tasks.cancel_scope.cancel()
    except* HOST_GONE:
        pass  # the host closed stdout: nothing more can be answered, the session is over
    finally:
        stop.install()  # the event loop's receiver is gone: a signal from here on is noted
        with anyio.CancelScope(shield=True), anyio.move_on_after(STOP_WITHIN):
            await bridge.client.aclose()


async def _session(server: Server[Any], framing: Framing, stdin: Stdin,
                   text: io.TextIOWrapper) -> None:
    # stdin is read here, line by line, so that what the SDK would drop is answered; stdout
    # stays the SDK's (it keeps stray output of the process off the wire)
    lines = framing.messages(anyio.wrap_file(text))
    async with stdio_server(stdin=cast(Any, lines)) as (read, write):
        framing.attach(write)
        try:
            await server.run(read, framing.answering(write),
                             server.create_initialization_options())
        finally:
            # the session ended another way (stdout broken, a stop): its input ends too, or
            # the SDK would wait for the line stdin is still waiting for
            stdin.end()


async def _stopping(signals: AsyncIterator[signal.Signals], stdin: Stdin,
                    session: anyio.CancelScope) -> None:
    """A stop signal ends the session as the end of its input does (the calls in flight given
    up, the lines begun finished); one that has not ended within ``STOP_WITHIN`` s is
    cancelled."""
    async for _ in signals:
        stdin.end()
        await anyio.sleep(STOP_WITHIN)
        session.cancel()
        return
