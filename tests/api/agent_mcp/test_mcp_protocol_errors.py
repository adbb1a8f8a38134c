"""``/mcp`` against the MCP specification's error rules, on the handshake protocol (2025-11-25,
the newest ``initialize`` offers), the per-request protocol (2026-07-28) and, for batches,
2025-03-26: an unknown tool and a made-up ``tools/list`` cursor are the protocol error
``-32602`` (Invalid params), not a tool result nor the whole listing; a ``tools/call`` whose
params fail the request schema is ``-32602`` too; ``ping`` is answered empty where the
protocol has it; notifications, malformed ones included, get no answer; an unsupported
``initialize`` version is answered with the newest the server speaks; and a client of the
per-request protocol that goes away cancels its call (that protocol's rule: a disconnect is the
cancellation)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from litestar import Litestar

from context_service.http.mcp import dispatch, tools
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import JSON_ONLY, Workspace, post_all
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
LEGACY = {**JSON_ONLY, "MCP-Protocol-Version": HANDSHAKE}
META = {types.PROTOCOL_VERSION_META_KEY: MODERN, types.CLIENT_CAPABILITIES_META_KEY: {}}


def _legacy(method: str, params: Any = None, request_id: Any = 1) -> tuple[bytes, dict[str, str]]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode(), LEGACY


def _modern(method: str, params: dict[str, Any] | None = None,
            request_id: Any = 1) -> tuple[bytes, dict[str, str]]:
    """A message of the per-request protocol: its envelope in ``_meta``, its method (and the
    tool's name) in headers as that transport asks."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method,
                               "params": {**(params or {}), "_meta": META}}
    if request_id is not None:
        message["id"] = request_id
    headers = {**JSON_ONLY, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if isinstance((params or {}).get("name"), str):
        headers["Mcp-Name"] = (params or {})["name"]
    return json.dumps(message).encode(), headers


def _error(answer: Any, request_id: Any = 1) -> dict[str, Any]:
    """The JSON-RPC error of ``answer``, checked to answer ``request_id`` with no result."""
    assert answer.status_code in (200, 400, 404), answer.text  # 2026-07-28 maps codes to statuses
    message = answer.json()
    assert message["id"] == request_id and "result" not in message, message
    error: dict[str, Any] = message["error"]
    return error


def test_an_unknown_tool_is_invalid_params_on_every_protocol(
        workspace: Workspace, mcp_app: Litestar) -> None:
    """The specification's example: ``{"code": -32602, "message": "Unknown tool: ..."}``; it
    was a tool result (``isError``, ``NOT_FOUND``), as if the tool had run and failed."""
    call = {"name": "no_such_tool", "arguments": {}}
    batch = (b'[{"jsonrpc":"2.0","id":"a","method":"ping"},'
             b'{"jsonrpc":"2.0","id":"b","method":"tools/call","params":'
             + json.dumps(call).encode() + b"}]")
    legacy, modern, batched = post_all(mcp_app, workspace.reader, [
        _legacy("tools/call", call), _modern("tools/call", call),
        (batch, {**JSON_ONLY, "MCP-Protocol-Version": "2025-03-26"})])
    for answer in (legacy, modern):
        error = _error(answer)
        assert error["code"] == INVALID_PARAMS, error
        assert error["message"] == "Unknown tool: no_such_tool", error
    answers = {a["id"]: a for a in batched.json()}
    assert answers["a"]["result"] == {}
    assert answers["b"]["error"]["code"] == INVALID_PARAMS, answers["b"]


def test_a_tool_the_credential_may_not_call_stays_a_tool_error(
        workspace: Workspace, mcp_app: Litestar) -> None:
    """A tool of the catalogue the credential's scopes leave unlisted is not unknown: its route
    refuses it, as over HTTP (a tool error ``FORBIDDEN`` the model can read)."""
    (answer,) = post_all(mcp_app, workspace.reader, [_legacy("tools/call", {
        "name": "run_query_template", "arguments": {"templateId": "passages"}})])
    result = answer.json()["result"]
    assert result["isError"] is True and result["structuredContent"]["code"] == "FORBIDDEN"


@pytest.mark.parametrize("cursor", ["bogus", "", "eyJwYWdlIjogMn0="])
def test_a_cursor_never_given_is_invalid_params(workspace: Workspace, mcp_app: Litestar,
                                                cursor: str) -> None:
    """The listing is one page (no ``nextCursor``), so no cursor is one the service gave:
    "Invalid cursors SHOULD result in an error with code -32602". The whole listing came back,
    and a client walking pages could not tell it had been handed page one again."""
    legacy, modern, first = post_all(mcp_app, workspace.reader, [
        _legacy("tools/list", {"cursor": cursor}), _modern("tools/list", {"cursor": cursor}),
        _legacy("tools/list", {"cursor": None})])
    for answer in (legacy, modern):
        error = _error(answer)
        assert error["code"] == INVALID_PARAMS, error
        assert "cursor" in error["message"], error
    listing = first.json()["result"]  # a null cursor is no cursor: the first page
    assert "nextCursor" not in listing and listing["tools"]


@pytest.mark.parametrize("params", [
    {"arguments": {}},  # no name
    {"name": 5, "arguments": {}},
    {"name": "list_context_sets", "arguments": [1]},
    {"name": "list_context_sets", "arguments": "{}"},
])
def test_call_params_outside_the_request_schema_are_invalid_params(
        workspace: Workspace, mcp_app: Litestar, params: dict[str, Any]) -> None:
    """Malformed requests, failing the ``CallToolRequest`` schema, are protocol errors; the
    request's id is known, so the error answers it."""
    posts = [_legacy("tools/call", params, request_id="r-1")]
    if not isinstance(params.get("name", ""), int):  # 2026-07-28 first checks its Mcp-Name
        posts.append(_modern("tools/call", params, request_id="r-1"))
    for answer in post_all(mcp_app, workspace.reader, posts):
        assert _error(answer, "r-1")["code"] == INVALID_PARAMS


def test_ping_is_answered_empty_where_the_protocol_has_it(workspace: Workspace,
                                                          mcp_app: Litestar) -> None:
    """``ping`` MUST be answered promptly with an empty result, on the handshake protocols (a
    request naming no version speaks 2025-03-26); 2026-07-28 has no ``ping``: method not
    found."""
    ping = b'{"jsonrpc":"2.0","id":"p","method":"ping"}'
    legacy, unnamed, modern = post_all(mcp_app, workspace.reader, [
        (ping, LEGACY), (ping, JSON_ONLY), _modern("ping", request_id="p")])
    assert legacy.json() == unnamed.json() == {"jsonrpc": "2.0", "id": "p", "result": {}}
    assert _error(modern, "p")["code"] == METHOD_NOT_FOUND


def _initialize(version: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "agent", "version": "1"}}}).encode()


def test_initialize_answers_the_version_asked_or_the_newest_it_speaks(
        workspace: Workspace, mcp_app: Litestar) -> None:
    """A supported version is answered as asked; another (unknown, or the per-request protocol,
    which has no handshake) with the newest version ``initialize`` offers."""
    asked = ["2025-03-26", "2025-06-18", HANDSHAKE, "1999-01-01", MODERN]
    answers = post_all(mcp_app, workspace.reader, [(_initialize(v), JSON_ONLY) for v in asked])
    versions = [a.json()["result"]["protocolVersion"] for a in answers]
    assert versions == ["2025-03-26", "2025-06-18", HANDSHAKE, HANDSHAKE, HANDSHAKE]


def test_notifications_get_no_answer(workspace: Workspace, mcp_app: Litestar) -> None:
    """A notification is never answered (202, no body), whatever its method (one unknown, one
    named like a request) and however malformed its params: "Invalid cancellation notifications
    SHOULD be ignored"; a notification's method is never run (a ``tools/call`` without an id
    calls nothing)."""
    notifications = [
        _legacy("notifications/initialized", request_id=None),
        _legacy("notifications/cancelled", {"requestId": 41}, request_id=None),
        _legacy("notifications/cancelled", {"requestId": {"not": "an id"}}, request_id=None),
        _legacy("notifications/cancelled", {}, request_id=None),
        _legacy("notifications/no_such_thing", {"x": 1}, request_id=None),
        _legacy("tools/list", request_id=None),
        _legacy("tools/call", {"name": "no_such_tool", "arguments": {}}, request_id=None),
        _modern("notifications/cancelled", {"requestId": 41}, request_id=None),
        _modern("notifications/cancelled", {"requestId": [1]}, request_id=None),
    ]
    for answer in post_all(mcp_app, workspace.reader, notifications):
        assert (answer.status_code, answer.content) == (202, b""), answer.text


def test_a_client_of_the_per_request_protocol_leaving_cancels_its_call(
        workspace: Workspace, mcp_app: Litestar, monkeypatch: pytest.MonkeyPatch) -> None:
    """2026-07-28: "The server MUST treat a client disconnect as cancellation of that request".
    A call whose route has not answered when its client goes away is stopped (the route's work
    is cancelled) and nothing is sent for it; the handshake protocols' rule is the other one
    (a disconnect is no cancellation), so a legacy call runs to its end."""
    started: list[str] = []
    stopped: list[str] = []
    release = anyio.Event()
    expected = 1  # the routes started when the client leaves

    async def slow_route(scope: Any, path: str, body: dict[str, Any]) -> Any:
        started.append(path)
        try:
            await release.wait()
        except BaseException:
            stopped.append(path)
            raise
        return await route(scope, path, body)

    route = dispatch.call_route
    monkeypatch.setattr(tools, "call_route", slow_route)
    call = {"name": "list_context_sets", "arguments": {}}

    async def leaving(body: bytes, headers: dict[str, str]) -> list[Any]:
        """The call posted straight to the application; its client leaves once the route
        started. What was sent back."""
        sent: list[Any] = []
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            while len(started) < expected:  # the client stays until the route has started
                await anyio.sleep(0.01)
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            sent.append(message)

        wire = [(k.lower().encode(), v.encode()) for k, v in {
            **headers, "Authorization": f"Bearer {workspace.reader}", "Host": "testserver",
            "Content-Length": str(len(body))}.items()]
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
                 "root_path": "", "query_string": b"", "headers": wire,
                 "client": ("127.0.0.1", 1), "server": ("testserver", 80)}
        with anyio.fail_after(10):
            await mcp_app(scope, receive, send)  # type: ignore[arg-type]
        return sent

    async def run() -> tuple[list[Any], list[Any]]:
        nonlocal expected
        async with mcp_app.lifespan():
            expected = 1
            modern = await leaving(*_modern("tools/call", call))
            expected = 2
            async with anyio.create_task_group() as tasks:
                legacy_sent: list[Any] = []

                async def legacy() -> None:
                    legacy_sent.extend(await leaving(*_legacy("tools/call", call)))

                tasks.start_soon(legacy)
                while len(started) < 2:
                    await anyio.sleep(0.01)
                await anyio.sleep(0.2)  # the client has left: the call goes on
                assert stopped == [started[0]]
                release.set()
            return modern, legacy_sent

    modern, legacy = asyncio.run(run())
    assert len(started) == 2 and stopped == [started[0]], (started, stopped)
    assert not any(m["type"] == "http.response.body" and m.get("body") for m in modern), modern
    body = b"".join(m.get("body", b"") for m in legacy if m["type"] == "http.response.body")
    assert json.loads(body)["result"]["isError"] is False
