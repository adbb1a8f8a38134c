"""``/mcp`` in the Litestar application: the admission gate in front of the SDK's stateless
Streamable HTTP transport (one JSON answer per POST, so any replica can answer), its lifespan,
and the protected-resource metadata of RFC 9728."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar, Request, Response, asgi, get
from litestar.types import Receive, Scope, Send
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from context_service.contract.tools import READ, RUN
from context_service.http.agent import errors as api
from context_service.http.mcp import gate, tools

PATH = "/mcp"
VERSION = "0.1.0"


class McpEndpoint:
    """The routes and the lifespan of one application's MCP endpoint."""

    def __init__(self) -> None:
        self.server = tools.server(VERSION)
        self.sessions: StreamableHTTPSessionManager | None = None
        endpoint = self

        @asgi(PATH, include_in_schema=False, copy_scope=False)
        async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
            # a refusal is raised: the application answers it as every /api/ error
            admitted = await gate.admit(Request(scope, receive))
            scope[gate.CREDENTIAL] = admitted  # type: ignore[literal-required]
            assert endpoint.sessions is not None, "the application's lifespan is not running"
            await endpoint.sessions.handle_request(scope, receive, send)  # type: ignore[arg-type]

        @get(gate.METADATA_PATH, include_in_schema=False, sync_to_thread=False)
        def metadata(request: Request[Any, Any, Any]) -> Response[dict[str, Any]]:
            """The protected resource ``/mcp`` (RFC 9728): bearer credentials, the scopes."""
            base = gate.base_url(request.scope)
            return Response({"resource": base + PATH, "bearer_methods_supported": ["header"],
                             "scopes_supported": [READ, RUN],
                             "resource_name": "Context Service agent tools"},
                            headers=api.NO_STORE)

        self.routes = [mcp, metadata]

    @asynccontextmanager
    async def lifespan(self, _: Litestar) -> AsyncIterator[None]:
        """A session manager runs once: each start of the application gets its own."""
        self.sessions = StreamableHTTPSessionManager(app=self.server, stateless=True,
                                                     json_response=True)
        try:
            async with self.sessions.run():
                yield
        finally:
            self.sessions = None
