"""``/mcp`` in the Litestar application: the admission gate in front of the SDK's stateless
Streamable HTTP transport (one JSON answer per POST, so any replica can answer), its lifespan,
and the protected-resource metadata of RFC 9728.

The SDK is imported, and its session manager started, by the first request that passes the
gate: a service whose agents never speak MCP does not pay for it (about 0.9 s of imports at every
start). The import runs in a worker thread, so the event loop keeps answering meanwhile; the
session manager then runs in the lifespan's task group until the application stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from litestar import Litestar, Request, Response, asgi, get
from litestar.types import Receive, Scope, Send

from context_service.domain.workspace.roles import SCOPES
from context_service.http.agent import errors as api
from context_service.http.mcp import gate

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

PATH = "/mcp"
VERSION = "0.1.0"


def session_manager() -> StreamableHTTPSessionManager:
    """The SDK's stateless session manager over this service's tools (imports the SDK)."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from context_service.http.mcp import tools

    return StreamableHTTPSessionManager(app=tools.server(VERSION), stateless=True,
                                        json_response=True)


class _Running:
    """One start of the application: the session manager once asked for, and how it ends."""

    def __init__(self) -> None:
        self.wanted = anyio.Event()  # a request passed the gate
        self.ready = anyio.Event()  # the manager runs, or could not be made (``failure``)
        self.stop = anyio.Event()  # the application stops
        self.sessions: StreamableHTTPSessionManager | None = None
        self.failure: BaseException | None = None

    async def serve_when_wanted(self) -> None:
        await self.wanted.wait()
        try:
            manager = await anyio.to_thread.run_sync(session_manager)
        except Exception as exc:  # reported to every request that waits for it
            self.failure = exc
            self.ready.set()
            return
        async with manager.run():
            self.sessions = manager
            self.ready.set()
            await self.stop.wait()

    async def sessions_started(self) -> StreamableHTTPSessionManager:
        if self.sessions is None:
            self.wanted.set()
            await self.ready.wait()
            if self.failure is not None:
                raise RuntimeError("the MCP endpoint could not start") from self.failure
        assert self.sessions is not None
        return self.sessions


# Stateless, the endpoint has no stream of server messages to open (GET) and no session to end
# (DELETE): the SDK's transport would hold a GET's empty event stream open until the client
# leaves, so any other method than POST is refused at once, as the protocol allows.
_NOT_ALLOWED = (b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":'
                b'"Method Not Allowed: /mcp is stateless; POST each JSON-RPC message"}}')


async def _not_allowed(send: Send) -> None:
    await send({"type": "http.response.start", "status": 405, "headers": [
        (b"allow", b"POST"), (b"content-type", b"application/json"),
        (b"content-length", str(len(_NOT_ALLOWED)).encode())]})
    await send({"type": "http.response.body", "body": _NOT_ALLOWED, "more_body": False})


class McpEndpoint:
    """The routes and the lifespan of one application's MCP endpoint."""

    def __init__(self) -> None:
        self.running: _Running | None = None
        endpoint = self

        @asgi(PATH, include_in_schema=False, copy_scope=False)
        async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
            # a refusal is raised: the application answers it as every /api/ error
            admitted = await gate.admit(Request(scope, receive))
            if scope.get("method") != "POST":
                await _not_allowed(send)
                return
            scope[gate.CREDENTIAL] = admitted  # type: ignore[literal-required]
            running = endpoint.running
            assert running is not None, "the application's lifespan is not running"
            sessions = await running.sessions_started()
            await sessions.handle_request(scope, receive, send)  # type: ignore[arg-type]

        @get(gate.METADATA_PATH, include_in_schema=False, sync_to_thread=False)
        def metadata(request: Request[Any, Any, Any]) -> Response[dict[str, Any]]:
            """The protected resource ``/mcp`` (RFC 9728): bearer credentials, the scopes."""
            base = gate.base_url(request.scope)
            return Response({"resource": base + PATH, "bearer_methods_supported": ["header"],
                             "scopes_supported": list(SCOPES),
                             "resource_name": "Context Service agent tools"},
                            headers=api.NO_STORE)

        self.routes = [mcp, metadata]

    @asynccontextmanager
    async def lifespan(self, _: Litestar) -> AsyncIterator[None]:
        """Each start of the application gets its own session manager (one runs only once),
        made on the first request; stopping ends it, as it ends a manager never asked for."""
        running = self.running = _Running()
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(running.serve_when_wanted)
                try:
                    yield
                finally:
                    running.stop.set()
                    if not running.wanted.is_set():
                        tasks.cancel_scope.cancel()
        finally:
            self.running = None
