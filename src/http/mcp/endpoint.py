"""``/mcp`` in the Litestar application: the admission gate in front of the SDK's stateless
Streamable HTTP transport (one JSON answer per POST, so any replica can answer; a batch of
protocol 2025-03-26 is one POST too, its answers one JSON array), its lifespan, and the
protected-resource metadata of RFC 9728.

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
import msgspec
from litestar import Litestar, Request, Response, asgi, get
from litestar.types import Receive, Scope, Send

from context_service.contract.mcp_batches import BATCHING, INITIALIZE_IN_BATCH
from context_service.domain.workspace.roles import SCOPES
from context_service.http.agent import errors as api
from context_service.http.agent import late_body
from context_service.http.limits import JSON_WHITESPACE, MAX_BODY
from context_service.http.mcp import gate

INVALID_REQUEST = -32600  # JSON-RPC's code for a message that is not a valid request
INVALID_PARAMS = -32602

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


# A body that does not come within the agent API's body wait, as the agent routes say it: it
# would otherwise hold the request open for as long as the client likes to send it.
def _late() -> str:
    return f"request body did not arrive within {late_body.BODY_WAIT_SECONDS:g} seconds"


_CLOSE = (b"connection", b"close")  # the rest of a body left unread is no next request

# Protocol 2025-03-26 has JSON-RPC batches, which a server must accept; it is also the version a
# request naming none speaks (the transport's rule). 2025-06-18 dropped them. A batch's members
# are answered one after the other, each as if posted alone; their number is bounded, as each
# one costs a pass through the transport (a ``ping`` or a listing takes no rate-limit token).
MAX_BATCH = 20
NO_BATCHES = ("Invalid Request: JSON-RPC batches belong to protocol 2025-03-26 alone;"
              " POST each message alone")
EMPTY_BATCH = "Invalid Request: an empty batch"
LONG_BATCH = f"Invalid Request: a batch holds at most {MAX_BATCH} messages"
# the 2025 transport's answer to a body that is no JSON-RPC message was "invalid params" and the
# validation library's dump (a kilobyte echoing the body, naming the library and its version)
NOT_A_MESSAGE = ("Invalid Request: the body must be one JSON-RPC message object"
                 " (jsonrpc \"2.0\", a method or a result)")


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


def _said_plainly(send: Send) -> Send:
    """``send`` where the 2025 transport's refusal of a body that is no JSON-RPC message (a
    400, invalid params, ``id`` null, the validation library's dump) is answered as JSON-RPC's
    invalid request, in a sentence. Only a 400 is held and looked at."""
    held: Any = None

    async def sending(message: Any) -> None:
        nonlocal held
        if message["type"] == "http.response.start" and message["status"] == 400:
            held = message
            return
        if held is not None and message["type"] == "http.response.body":
            start, held = held, None
            if not message.get("more_body", False) and _is_envelope_refusal(message["body"]):
                await _refuse(send, 400, NOT_A_MESSAGE)
                return
            await send(start)
        await send(message)

    return sending


def _is_envelope_refusal(body: bytes) -> bool:
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    error = answer.get("error") if isinstance(answer, dict) else None
    return (isinstance(error, dict) and answer.get("id") is None
            and error.get("code") == INVALID_PARAMS
            and str(error.get("message", "")).startswith("Validation error"))


def _is_request(body: bytes) -> bool:
    """Whether ``body`` is one JSON-RPC request: a method and an ``id``, whatever its type."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and "method" in message and "id" in message


def _protocol_version(scope: Scope) -> str:
    """The protocol the request names (``MCP-Protocol-Version``), else the one it speaks."""
    return next((v.decode("latin-1") for k, v in scope["headers"]
                 if k == b"mcp-protocol-version"), BATCHING)


def _batch_members(body: bytes) -> list[bytes] | None:
    """The members of a batch, each as the caller wrote it; None: the body is no JSON array, or
    none msgspec reads (``NaN``, a lone surrogate, nesting past its bound): what it is then is
    the transport's to say (a parse error, an invalid message)."""
    if body.lstrip(JSON_WHITESPACE)[:1] != b"[":
        return None
    try:
        return [bytes(member) for member in msgspec.json.decode(body, type=list[msgspec.Raw])]
    except (msgspec.DecodeError, RecursionError):
        return None


async def _refuse(send: Send, status: int, message: str,
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A JSON-RPC error answering no request (``id`` null), with its HTTP status."""
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": INVALID_REQUEST, "message": message}}).encode()
    await _answer(send, status, body, headers)


async def _answer(send: Send, status: int, body: bytes,
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A JSON answer written whole, with its HTTP status."""
    await send({"type": "http.response.start", "status": status, "headers": [
        *headers, (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class _Captured:
    """One answer of the transport, kept: its status, headers and body."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def send(self, message: Any) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        return int(self.messages[0]["status"]) if self.messages else 500

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages[1:])


async def _answer_batch(sessions: StreamableHTTPSessionManager, scope: Scope,
                        receive: Receive, send: Send, members: list[bytes]) -> None:
    """A batch of protocol 2025-03-26: each member answered as if posted alone, the answers in
    one JSON array (none: 202). A member whose answer is no JSON-RPC message (the request's
    headers refused: 406, 415) is the answer to the whole request."""
    if not members:
        await _refuse(send, 400, EMPTY_BATCH)
        return
    if len(members) > MAX_BATCH:
        await _refuse(send, 400, LONG_BATCH)
        return
    answers = []
    for member in members:
        if (refusal := _batched_initialize(member)) is not None:
            if refusal:  # an initialize sent as a notification is owed nothing
                answers.append(refusal)
            continue
        captured = _Captured()
        await sessions.handle_request(
            {**scope}, _replaying(member, receive),  # type: ignore[arg-type]
            _answering_requests(member, _said_plainly(captured.send)))  # type: ignore[arg-type]
        if captured.status == 202:
            continue
        if not _is_message(captured.body):
            for message in captured.messages:
                await send(message)
            return
        answers.append(captured.body)
    if not answers:
        await send({"type": "http.response.start", "status": 202, "headers": [
            (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    body = b"[" + b",".join(answers) + b"]"
    await send({"type": "http.response.start", "status": 200, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def _batched_initialize(member: bytes) -> bytes | None:
    """The answer to an ``initialize`` inside a batch, which 2025-03-26 forbids: ``-32600``
    under its id, the member not run (empty: one sent as a notification, answered by nothing);
    None: any other member, answered as if sent alone."""
    try:
        message = json.loads(member)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    if "id" not in message:
        return b""
    request_id = message["id"]
    if not isinstance(request_id, str | int) or isinstance(request_id, bool):
        return None  # no request the transport can answer by id: its own refusal
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {
        "code": INVALID_REQUEST, "message": INITIALIZE_IN_BATCH}}).encode()


def _is_message(body: bytes) -> bool:
    try:
        answer = json.loads(body)
    except ValueError:
        return False
    return isinstance(answer, dict) and answer.get("jsonrpc") == "2.0"


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


def _per_request(scope: Scope) -> bool:
    """Whether the request speaks a per-request protocol (2026-07-28), whose rule for a client
    that goes away differs from the handshake protocols'. Asked once the SDK is imported."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return _protocol_version(scope) in MODERN_PROTOCOL_VERSIONS


async def _answered_unless_left(sessions: StreamableHTTPSessionManager, scope: Scope, body: bytes,
                                receive: Receive, send: Send) -> None:
    """One message of the per-request protocol, its handling cancelled if the client leaves
    first: "the server MUST treat a client disconnect as cancellation of that request" (a
    tool's route stops, nothing is answered). The transport answers a JSON request without
    watching the client, so the request's own ``receive`` is watched here; the transport is
    handed the body read, then the disconnect once the client left. (The handshake protocols
    say the opposite, a disconnect is no cancellation, so their requests run to the end.)"""
    left = anyio.Event()
    unread: list[bytes] = [body]

    async def replay() -> Any:
        if unread:
            return {"type": "http.request", "body": unread.pop(), "more_body": False}
        await left.wait()
        return {"type": "http.disconnect"}

    async with anyio.create_task_group() as tasks:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            left.set()
            tasks.cancel_scope.cancel()

        tasks.start_soon(watch)
        await sessions.handle_request(scope, replay, send)  # type: ignore[arg-type]
        tasks.cancel_scope.cancel()


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
            with anyio.move_on_after(late_body.BODY_WAIT_SECONDS) as waiting:
                body = await _body(receive)
            if waiting.cancelled_caught:
                await _refuse(send, 400, _late(), (_CLOSE,))
                return
            if body is None:
                return
            if len(body) > MAX_BODY:
                await _refuse(send, 400, TOO_LARGE)
                return
            if (unsupported := gate.unsupported_version(scope, body)) is not None:
                await _answer(send, 400, unsupported)
                return
            members = _batch_members(body)
            if members is not None and _protocol_version(scope) != BATCHING:
                await _refuse(send, 400, NO_BATCHES)
                return
            scope[gate.CREDENTIAL] = admitted  # type: ignore[literal-required]
            running = endpoint.running
            assert running is not None, "the application's lifespan is not running"
            sessions = await running.sessions_started()
            if members is not None:
                await _answer_batch(sessions, scope, receive, send, members)
                return
            answering = _answering_requests(body, _said_plainly(send))
            if _per_request(scope):
                await _answered_unless_left(sessions, scope, body, receive, answering)
                return
            replayed = _replaying(body, receive)
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
