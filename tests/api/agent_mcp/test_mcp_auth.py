"""Admission at ``/mcp`` through the agent pipeline: a missing, malformed, unknown, revoked or
expired credential answers 401 with a ``WWW-Authenticate`` challenge naming the protected
resource metadata; a browser is refused; failed attempts are throttled per address; scope,
live authority and the rate limit refuse each tool call as its route does.

One service and one seeded workspace for the module (its tests add credentials and members of
their own to it, and count none); each test's ``mcp_app`` is an application of its own over that
service, so the clock, rate limiter and failure throttle a test sets are its own."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

import pytest
from litestar import Litestar
from mcp import MCPError

from context_service.http.agent.ratelimit import AuthFailures, RateLimiter
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import (
    BASE,
    Workspace,
    connected,
    http,
)
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture
from tests.api.sets_support import CREDENTIALS, MEMBERS, token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
INIT = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"Accept": "application/json, text/event-stream",
           "MCP-Protocol-Version": "2025-06-18"}
METADATA = BASE + "/.well-known/oauth-protected-resource/mcp"
NOT_VALID = {"code": "UNAUTHORIZED", "message": "agent credential is not valid"}


def _post(app: Litestar, headers: dict[str, str]) -> Any:
    async def run() -> Any:
        async with app.lifespan(), http(app, {**HEADERS, **headers}) as client:
            return await client.post("/mcp", json=INIT)
    return asyncio.run(run())


def _refused(app: Litestar, headers: dict[str, str], status: int, body: dict[str, str]) -> Any:
    resp = _post(app, headers)
    assert resp.status_code == status, resp.text
    assert resp.json() == body
    assert resp.headers["Cache-Control"] == "no-store"
    return resp


def _bearer(value: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {value}"}


def test_credential_failures_answer_401_with_a_challenge(workspace: Workspace,
                                                         mcp_app: Litestar) -> None:
    missing = _refused(mcp_app, {}, 401, {"code": "UNAUTHORIZED",
                                          "message": "agent credential is required"})
    assert missing.headers["WWW-Authenticate"] == f'Bearer resource_metadata="{METADATA}"'
    _refused(mcp_app, {"Authorization": "Basic abc"}, 401, {
        "code": "UNAUTHORIZED", "message": "agent credential is malformed"})
    unknown = _refused(mcp_app, _bearer("bdk_0123456789abcdef_" + "A" * 43), 401, NOT_VALID)
    assert unknown.headers["WWW-Authenticate"] == (
        f'Bearer resource_metadata="{METADATA}", error="invalid_token", '
        'error_description="agent credential is not valid"')
    revoked = token(workspace.api)
    assert _post(mcp_app, _bearer(revoked)).status_code == 200
    assert workspace.api.as_("user:alice").delete(
        f"{CREDENTIALS}/{revoked.split('_')[1]}").status_code == 204
    _refused(mcp_app, _bearer(revoked), 401, NOT_VALID)


def test_an_expired_credential_is_told_so(workspace: Workspace, mcp_app: Litestar) -> None:
    agent = mcp_app.state.services.agent
    read = workspace.api.as_("user:alice").get(
        f"{CREDENTIALS}/{workspace.reader.split('_')[1]}").json()
    expires = datetime.fromisoformat(read["expiresAt"].replace("Z", "+00:00"))
    real = agent.clock
    agent.clock = lambda: expires + timedelta(seconds=1)
    try:
        resp = _refused(mcp_app, _bearer(workspace.reader), 401, {
            "code": "EXPIRED_CREDENTIAL", "message": "agent credential has expired"})
        assert 'error="invalid_token"' in resp.headers["WWW-Authenticate"]
    finally:
        agent.clock = real


def test_browsers_are_refused_before_the_credential(workspace: Workspace,
                                                    mcp_app: Litestar) -> None:
    for header in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Mode": "cors"}):
        resp = _refused(mcp_app, {**_bearer("nonsense"), **header}, 403, {
            "code": "AGENT_BROWSER_REQUEST_REFUSED",
            "message": "browser requests are refused; call the agent API from a server-side "
                       "client"})
        assert "WWW-Authenticate" not in resp.headers


def test_failed_attempts_are_throttled_per_address(workspace: Workspace,
                                                   mcp_app: Litestar) -> None:
    mcp_app.state.services.auth_failures = AuthFailures(rate=0.01, burst=2)
    bad = _bearer("bdk_0123456789abcdef_" + "A" * 43)
    assert [_post(mcp_app, bad).status_code for _ in range(2)] == [401, 401]
    resp = _post(mcp_app, _bearer(workspace.reader))  # refused before it is looked at
    assert resp.status_code == 429 and resp.json()["code"] == "RATE_LIMITED"
    assert int(resp.headers["Retry-After"]) >= 1


def test_the_sdk_client_cannot_connect_without_a_valid_credential(
        workspace: Workspace, mcp_app: Litestar) -> None:
    async def attempt(bearer: str | None) -> None:
        async with mcp_app.lifespan(), connected(mcp_app, bearer) as client:
            await client.list_tools()

    for bearer in (None, "bdk_0123456789abcdef_" + "A" * 43):
        with pytest.raises(ExceptionGroup) as failed:
            asyncio.run(attempt(bearer))
        assert failed.group_contains(MCPError, match="error response")


def test_authority_and_rate_limit_refuse_each_call(workspace: Workspace,
                                                   mcp_app: Litestar) -> None:
    api = workspace.api
    resp = api.as_("user:alice").put(MEMBERS, {"subject": {"kind": "user", "name": "ann"},
                                               "role": "admin"})
    assert resp.status_code == 200
    ann = token(api, creator="user:ann")
    agent = mcp_app.state.services.agent
    clock = [1000.0]
    agent.limiter = RateLimiter(rate=0.1, burst=2, clock=lambda: clock[0])

    async def calls() -> list[Any]:
        async with mcp_app.lifespan(), connected(mcp_app, ann) as client:
            listed = await client.call_tool("list_context_sets", {})
            assert api.as_("user:alice").delete(f"{MEMBERS}/user:ann").status_code == 204
            lost = await client.call_tool("list_context_sets", {})
            return [listed, lost]

    listed, lost = asyncio.run(calls())
    assert not listed.is_error
    assert lost.is_error and lost.structured_content["code"] == (
        "AGENT_CREDENTIAL_AUTHORITY_LOST")

    async def limited() -> list[Any]:
        async with mcp_app.lifespan(), connected(mcp_app, workspace.reader) as client:
            # listing the tools is not a call: only the calls take from the bucket
            await client.list_tools()
            return [await client.call_tool("list_context_sets", {}) for _ in range(3)]

    results = asyncio.run(limited())
    assert [r.is_error for r in results] == [False, False, True]
    assert results[2].structured_content["code"] == "RATE_LIMITED"
    # when to try again reaches the client and the model, as the answer's Retry-After said
    wait = results[2].meta["retryAfterSeconds"]
    text = results[2].content[0].text
    assert wait >= 1 and text == f"RATE_LIMITED: rate limit exceeded; retry after {wait} seconds"


def test_the_protected_resource_metadata(mcp_app: Litestar) -> None:
    async def run() -> Any:
        async with mcp_app.lifespan(), http(mcp_app) as client:
            return await client.get("/.well-known/oauth-protected-resource/mcp")

    resp = asyncio.run(run())
    assert resp.status_code == 200
    assert resp.json() == {"resource": BASE + "/mcp", "bearer_methods_supported": ["header"],
                           "scopes_supported": ["context:read", "queries:run"],
                           "resource_name": "Context Service agent tools"}
