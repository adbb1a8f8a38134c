"""The order of checks of §1.5 on every agent route of the route table: browser refusal,
credential, scope, authority, rate limit, body; the first failing check answers. New agent
routes are covered as soon as they are registered.

One service for the module, each test in a workspace of its own; the test that swaps the rate
limiter and the clock does so on an application of its own over that service."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.http.agent.ratelimit import RateLimiter
from context_service.http.app import create_app
from tests.api.agent.conftest import read_probe, run_probe
from tests.api.agent.test_pipeline import (
    MALFORMED,
    NOT_VALID,
    REFUSED,
    REQUIRED,
    gone,
)
from tests.api.agent.test_pipeline_service_wide import EXPIRED
from tests.api.agent.workspace_namespaced import owner as owner  # the fixture
from tests.api.agent.workspace_namespaced import token_of
from tests.api.conftest import Api, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import credentials
from tests.support.api_helpers import add_member

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
SCOPE_OF = {"/api/agent/v1/query-templates/run": "queries:run"}
OTHER_SCOPE = {"context:read": "queries:run", "queries:run": "context:read"}


def agent_routes(api: Api) -> list[str]:
    paths = {route.path for route in api.client.app.routes
             if route.path.startswith("/api/agent/v1/") and "test-probe" not in route.path}
    return sorted(paths)


def call(api: Api, path: str, token: str | None, body: bytes = b"{}",
         headers: dict[str, str] | None = None) -> Any:
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    resp = api.client.post(path, content=body, headers=h)
    assert resp.headers.get("Cache-Control") == "no-store", (path, resp.status_code)
    assert resp.status_code < 500, (path, resp.text)
    return resp


@pytest.fixture
def alone(container: bootstrap.Container) -> Iterator[Namespaced]:
    """``owner`` (a workspace of the test's own with alice, adam, mia and vic) on an
    application of the test's own over the module's service, as ``agent_api`` builds one: the
    test swaps that application's rate limiter and clock."""
    app = create_app(bootstrap.services(container), extra_routes=[read_probe, run_probe])
    with TestClient(app=app) as client:
        own = namespaced(Api(client), "acme")
        add_member(own, "user:alice", "owner", ws=own.ns)
        for subject, role in (("user:adam", "admin"), ("user:mia", "member"),
                              ("user:vic", "viewer")):
            add_member(own, subject, role, caller="user:alice", ws=own.ns)
        yield own


def test_the_route_table_has_agent_routes(owner: Namespaced) -> None:
    assert len(agent_routes(owner)) >= 4


def test_first_failing_check_answers_on_every_route(alone: Namespaced) -> None:
    add_member(alone, "user:ann", "admin", caller="user:alice", ws=alone.ns)
    failures = []
    for path in agent_routes(alone):
        scope = SCOPE_OF.get(path, "context:read")
        try:
            _check_route(alone, path, scope)
        except AssertionError as exc:
            failures.append(f"{path}: {exc}")
    assert not failures, "\n".join(failures)


def _check_route(api: Namespaced, path: str, scope: str) -> None:
    good = token_of(api, "user:alice", scopes=[scope])
    # 1. browser refusal before anything, whatever the token or body
    for headers in ({"Origin": "null"}, {"Sec-Fetch-Mode": "no-cors"}):
        for token in (good, None, "bdk_nonsense"):
            expect(call(api, path, token, b"not json", headers), 403, REFUSED)
    # 2. the credential
    expect(call(api, path, None, b"not json"), 401, REQUIRED)
    expect(call(api, path, "x" + good, b"not json"), 401, MALFORMED)
    expect(call(api, path, "bdk_0123456789abcdef_" + "B" * 43, b"not json"), 401, NOT_VALID)
    # 3. scope, before authority
    wrong = token_of(api, "user:ann", scopes=[OTHER_SCOPE[scope]])
    lacks = {"code": "FORBIDDEN", "message": f'agent credential lacks scope "{scope}"'}
    expect(call(api, path, wrong, b"not json"), 403, lacks)
    anns = token_of(api, "user:ann", scopes=[scope])
    assert api.as_("user:alice").delete(f"/v1/namespaces/{api.ns}/members/user:ann") \
        .status_code == 204
    expect(call(api, path, wrong, b"not json"), 403, lacks)
    # 4. authority, before the rate limit and the body
    expect(call(api, path, anns, b"not json"), 403, gone(api.ns))
    add_member(api, "user:ann", "admin", caller="user:alice", ws=api.ns)
    # 5. rate limit, before the body; a request past step 4 takes a token whatever follows
    agent = api.client.app.state.services.agent
    limiter = agent.limiter
    agent.limiter = RateLimiter(rate=0.001, burst=1)
    try:
        first = call(api, path, good, b"not json")
        assert first.status_code == 400 and first.json()["code"] == "INVALID_REQUEST"
        limited = call(api, path, good, b"not json")
        assert limited.status_code == 429 and limited.json()["code"] == "RATE_LIMITED"
        assert int(limited.headers["Retry-After"]) >= 1
    finally:
        agent.limiter = limiter
    # 6. the body: decoding, then the route's own rules
    bad = call(api, path, good, b'{"unexpected": true}')
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_REQUEST", bad.text
    # revoked, expired: still the credential step
    expiring = token_of(api, "user:alice", scopes=[scope], expiresInDays=1)
    real = agent.clock
    agent.clock = lambda: real() + timedelta(days=1)
    try:
        expect(call(api, path, expiring, b"not json"), 401, EXPIRED)
    finally:
        agent.clock = real
    assert api.as_("user:alice").delete(f"{credentials(api)}/{good.split('_')[1]}") \
        .status_code == 204
    expect(call(api, path, good, b"not json"), 401, NOT_VALID)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_agent_routes_are_post_only(owner: Namespaced, method: str) -> None:
    for path in agent_routes(owner):
        resp = owner.client.request(method, path)
        expect(resp, 405, {"code": "METHOD_NOT_ALLOWED", "message": "method not allowed"})
        assert resp.headers["Allow"] == "POST"
