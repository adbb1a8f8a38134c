"""``/mcp`` in the Litestar application: the admission gate in front of the SDK's stateless
Streamable HTTP transport (one JSON answer per POST, so any replica can answer), its lifespan,
and the protected-resource metadata of RFC 9728.

The SDK is imported, and its session manager started, by the first request that passes the
gate: a service whose agents never speak MCP does not pay for it (about 0.9 s of imports at every
start). The import runs in a worker thread, so the event loop keeps answering meanwhile; the
session manager then runs in the lifespan's task group until the application stops."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
from litestar import Litestar, Request, Response, asgi, get
from litestar.types import Receive, Scope, Send

from context_service.domain.workspace.roles import SCOPES
from context_service.http.agent import errors as api
from context_service.http.limits import MAX_BODY
from context_service.http.mcp import gate

INVALID_REQUEST = -32600  # JSON-RPC's code for a message that is not a valid request

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
NOT_ALLOWED = "Method Not Allowed: /mcp is stateless; POST each JSON-RPC message"
# the API's one body limit (``limits.BodyLimit`` reads no further than one byte past it): said
# as such, where the SDK would report the stand-in it was handed as a JSON parse error
TOO_LARGE = f"request body too large (more than {MAX_BODY} bytes)"


# what /mcp answers is the credential's own (a tool's result is its route's answer): never
# stored by a cache, as every /api/ answer (agent-context-api.md §1.2)
NO_STORE = (b"cache-control", b"no-store")
# JSON-RPC's invalid request, said of an id MCP does not allow (a string or an integer)
NOT_AN_ID = "Invalid Request: the id of a request must be a string or an integer"


def _not_stored(send: Send) -> Send:
    """``send`` with ``Cache-Control: no-store`` on the answer, whoever writes it."""

    async def sending(message: Any) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", ()) if h[0].lower() != NO_STORE[0]]
            message = {**message, "headers": [*headers, NO_STORE]}
        await send(message)

    return sending


def _answering_requests(body: bytes, send: Send) -> Send:
    """``send`` where a request the 2025 transport took for a notification is answered as an
    invalid request. That transport reads a message whose ``id`` is no string or integer (null,
    ``1.5``, ``true``, an object) as a notification: it answers 202 without a body, and the
    client waits for an answer that never comes. Only a 202 is looked at, so a request answered
    as usual costs no second parse; what the transport does with the "notification" is to drop
    it, as it drops every notification of a method it does not know."""
    refused = False

    async def sending(message: Any) -> None:
        nonlocal refused
        if refused:  # the rest of the transport's 202
            return
        if (message["type"] == "http.response.start" and message["status"] == 202
                and _is_request(body)):
            refused = True
            await _refuse(send, 400, NOT_AN_ID)
            return
        await send(message)

    return sending


def _is_request(body: bytes) -> bool:
    """Whether ``body`` is one JSON-RPC request: a method and an ``id``, whatever its type."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and "method" in message and "id" in message


async def _refuse(send: Send, status: int, message: str,
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A JSON-RPC error answering no request (``id`` null), with its HTTP status."""
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": INVALID_REQUEST, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        *headers, (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _body(receive: Receive) -> bytes | None:
    """The request's whole body (at most one byte past the limit); None: the client left."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body read already handed over first, in one message."""
    given = False

    async def replay() -> Any:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class McpEndpoint:
    """The routes and the lifespan of one application's MCP endpoint."""

    def __init__(self) -> None:
        self.running: _Running | None = None
        endpoint = self

        @asgi(PATH, include_in_schema=False, copy_scope=False)
        async def mcp(scope: Scope, receive: Receive, send: Send) -> None:
            # a refusal is raised: the application answers it as every /api/ error
            admitted = await gate.admit(Request(scope, receive))
            send = _not_stored(send)
            if scope.get("method") != "POST":
                await _refuse(send, 405, NOT_ALLOWED, ((b"allow", b"POST"),))
                return
            body = await _body(receive)
            if body is None:
                return
            if len(body) > MAX_BODY:
                await _refuse(send, 400, TOO_LARGE)
                return
            scope[gate.CREDENTIAL] = admitted  # type: ignore[literal-required]
            running = endpoint.running
            assert running is not None, "the application's lifespan is not running"
            sessions = await running.sessions_started()
            replayed, answering = _replaying(body, receive), _answering_requests(body, send)
            await sessions.handle_request(scope, replayed, answering)  # type: ignore[arg-type]

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
