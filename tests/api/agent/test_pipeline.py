"""The bearer pipeline of every agent route (agent-context-api.md §1.5, §1.6, §4.5), through two
probe routes that run only the pipeline (scopes ``context:read`` and ``queries:run``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.config import Settings
from context_service.http.agent.ratelimit import RateLimiter
from context_service.http.app import create_app
from tests.api.agent.conftest import (
    ADMIN,
    CREDENTIALS,
    WS,
    add_member,
    bearer,
    probe,
    read_probe,
    token_of,
)
from tests.api.conftest import Api, each, expect

REFUSED = {"code": "AGENT_BROWSER_REQUEST_REFUSED",
           "message": "browser requests are refused; call the agent API from a server-side client"}
REQUIRED = {"code": "UNAUTHORIZED", "message": "agent credential is required"}
MALFORMED = {"code": "UNAUTHORIZED", "message": "agent credential is malformed"}
NOT_VALID = {"code": "UNAUTHORIZED", "message": "agent credential is not valid"}
EXPIRED = {"code": "EXPIRED_CREDENTIAL", "message": "agent credential has expired"}
LACKS_RUN = {"code": "FORBIDDEN", "message": 'agent credential lacks scope "queries:run"'}
GONE = {"code": "AGENT_CREDENTIAL_AUTHORITY_LOST",
        "message": "the credential's creator is no longer a member of workspace \"acme\""}
NO_RUN = {"code": "AGENT_CREDENTIAL_AUTHORITY_LOST",
          "message": "the credential's creator no longer holds \"queries:run\" in workspace "
                     "\"acme\""}
BROWSER_HEADERS = [{"Origin": "https://evil.example"}, {"Origin": ""}, {"Origin": "null"},
                   {"origin": "x"}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Mode": "cors"},
                   {"Sec-Fetch-Dest": "empty"}, {"Sec-Fetch-User": "?1"},
                   {"sec-fetch-anything": "1"}, {"SEC-FETCH-SITE": "same-origin"}]


def test_a_valid_credential_acts_as_its_creator(owner: Api) -> None:
    token = token_of(owner)
    resp = probe(owner, token, headers={"X-Context-Subject": "user:someone-else"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["creator"] == "user:alice" and resp.json()["workspace"] == WS
    assert resp.headers["Cache-Control"] == "no-store"


def test_browser_requests_are_refused_before_anything_else(owner: Api) -> None:
    token = token_of(owner)

    def refused(headers: dict[str, str]) -> None:
        for presented in (token, None, "bdk_garbage"):
            expect(probe(owner, presented, headers=headers), 403, REFUSED)
        resp = owner.client.post("/api/agent/v1/test-probe/read", content=b"not json",
                                 headers={**headers, **bearer(token)})
        expect(resp, 403, REFUSED)

    each(BROWSER_HEADERS, refused)


def test_credential_shape_rules(owner: Api) -> None:
    token = token_of(owner)
    expect(probe(owner, None), 401, REQUIRED)
    for header in (f"bearer {token}", f"BEARER   {token}", f"  Bearer {token}  ",
                   f"BeArEr {token}"):
        assert owner.client.post("/api/agent/v1/test-probe/read", content=b"{}",
                                 headers={"Authorization": header}).status_code == 200, header
    bad = [token, f"Basic {token}", f"Bearer{token}", "Bearer", "Bearer ", f"Bearer {token}x",
           f"Bearer {token[:-1]}", f"Bearer {token.upper()}", f"Bearer {token} extra",
           "Bearer bdk_0123456789abcdeg_" + "a" * 43, "Bearer bdk_0123456789abcdef_" + "a" * 42,
           "Bearer bdk_0123456789abcdef_" + "a" * 42 + "=", f"Token {token}", ""]

    def malformed(header: str) -> None:
        resp = owner.client.post("/api/agent/v1/test-probe/read", content=b"{}",
                                 headers={"Authorization": header})
        expect(resp, 401, MALFORMED)

    each(bad, malformed)
    two = owner.client.post("/api/agent/v1/test-probe/read", content=b"{}",
                            headers=[("Authorization", f"Bearer {token}"),
                                     ("Authorization", f"Bearer {token}")])
    expect(two, 401, MALFORMED)


def test_unknown_wrong_and_revoked_credentials_are_not_valid(
        owner: Api, container: bootstrap.Container) -> None:
    token = token_of(owner)
    credential_id = token.split("_")[1]
    other_secret = token_of(owner).split("_", 2)[2]
    expect(probe(owner, "bdk_0123456789abcdef_" + "A" * 43), 401, NOT_VALID)
    expect(probe(owner, f"bdk_{credential_id}_{other_secret}"), 401, NOT_VALID)
    head = container.store.head()
    for forged in (token[:-1], token[:30], token.replace("bdk_", "bdk-"), token + token):
        assert probe(owner, forged).status_code == 401
    assert container.store.head() == head  # a refused request records nothing
    assert owner.as_("user:alice").delete(f"{CREDENTIALS}/{credential_id}").status_code == 204
    expect(probe(owner, token), 401, NOT_VALID)


def test_expired_is_told_only_to_the_holder_of_the_secret(owner: Api) -> None:
    token = token_of(owner, expiresInDays=1)
    agent = owner.client.app.state.services.agent
    real = agent.clock
    read = owner.as_("user:alice").get(f"{CREDENTIALS}/{token.split('_')[1]}").json()
    expires = datetime.fromisoformat(read["expiresAt"].replace("Z", "+00:00"))
    agent.clock = lambda: expires - timedelta(microseconds=1)
    assert probe(owner, token).status_code == 200
    agent.clock = lambda: expires  # now >= expiresAt
    try:
        expect(probe(owner, token), 401, EXPIRED)
        wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
        expect(probe(owner, wrong), 401, NOT_VALID)
        assert owner.as_("user:alice").get(
            f"{CREDENTIALS}/{token.split('_')[1]}").json()["status"] == "expired"
        # revoked wins over expired
        assert owner.as_("user:alice").delete(
            f"{CREDENTIALS}/{token.split('_')[1]}").status_code == 204
        expect(probe(owner, token), 401, NOT_VALID)
    finally:
        agent.clock = real


def test_scope_comes_before_authority(owner: Api) -> None:
    add_member(owner, "user:ann", "admin", caller="user:alice")
    read_only = token_of(owner, "user:ann")
    both = token_of(owner, "user:ann", scopes=["context:read", "queries:run"])
    expect(probe(owner, read_only, "run"), 403, LACKS_RUN)
    assert probe(owner, both, "run").status_code == 200
    add_member(owner, "user:ann", "viewer", caller="user:alice")
    expect(probe(owner, both, "run"), 403, NO_RUN)
    assert probe(owner, both, "read").status_code == 200  # viewers hold context:read
    expect(probe(owner, read_only, "run"), 403, LACKS_RUN)  # scope first, authority second
    assert owner.as_("user:alice").delete(f"/v1/namespaces/{WS}/members/user:ann").status_code \
        == 204
    expect(probe(owner, both, "read"), 403, GONE)
    expect(probe(owner, read_only, "run"), 403, LACKS_RUN)
    # authority comes back with the role; the credential itself never changed
    add_member(owner, "user:ann", "member", caller="user:alice")
    assert probe(owner, both, "run").status_code == 200
    assert probe(owner, both, "read").status_code == 200


def test_the_bootstrap_administrator_always_holds_authority(owner: Api) -> None:
    token = token_of(owner, ADMIN, ws="no-members", scopes=["queries:run", "context:read"])
    assert probe(owner, token, "run").status_code == 200
    assert probe(owner, token, "read").json()["workspace"] == "no-members"


def test_rate_limit_per_credential(owner: Api) -> None:
    agent = owner.client.app.state.services.agent
    clock = [1000.0]
    agent.limiter = RateLimiter(rate=2.0, burst=3, clock=lambda: clock[0])
    token, other = token_of(owner), token_of(owner)
    assert [probe(owner, token).status_code for _ in range(3)] == [200, 200, 200]
    refused = probe(owner, token)
    expect(refused, 429, {"code": "RATE_LIMITED",
                          "message": "rate limit exceeded; retry after 1 seconds"})
    assert refused.headers["Retry-After"] == "1"
    assert probe(owner, other).status_code == 200  # buckets are per credential
    clock[0] += 0.5  # one token back
    assert probe(owner, token).status_code == 200
    assert probe(owner, token).status_code == 429  # a refused request takes nothing
    clock[0] += 0.49
    assert probe(owner, token).status_code == 429
    clock[0] += 0.02
    assert probe(owner, token).status_code == 200
    # failures before the limit step take no token
    agent.limiter = RateLimiter(rate=0.1, burst=1, clock=lambda: clock[0])
    for _ in range(3):
        assert probe(owner, token, "run").status_code == 403
    assert probe(owner, token).status_code == 200
    slow = probe(owner, token)
    assert slow.status_code == 429 and slow.headers["Retry-After"] == "10"


def test_rate_limit_zero_turns_it_off() -> None:
    limiter = RateLimiter(rate=0, burst=1)
    assert all(limiter.take("k") == 0 for _ in range(100))


@pytest.mark.parametrize("rate,burst,wait", [(5.0, 20, 1), (0.3, 1, 4), (0.25, 1, 4)])
def test_retry_after_is_the_ceiling_of_the_missing_token(rate: float, burst: int,
                                                         wait: int) -> None:
    limiter = RateLimiter(rate=rate, burst=burst, clock=lambda: 0.0)
    for _ in range(burst):
        assert limiter.take("k") == 0
    assert limiter.take("k") == wait


def test_removing_a_member_takes_effect_on_the_next_request(owner: Api) -> None:
    add_member(owner, "user:ann", "admin", caller="user:alice")
    token = token_of(owner, "user:ann")
    calls: list[Any] = []
    for _ in range(3):
        add_member(owner, "user:ann", "admin", caller="user:alice")
        calls.append(probe(owner, token).status_code)
        assert owner.as_("user:alice").delete(
            f"/v1/namespaces/{WS}/members/user:ann").status_code == 204
        calls.append(probe(owner, token).status_code)
    assert calls == [200, 403] * 3


def test_an_api_replica_without_the_projection_worker_sees_revocations(
        owner: Api, container: bootstrap.Container, database_url: str,
        settings: Settings) -> None:
    """A second process on the same database whose views are maintained by the first: its
    directory reads the views on every request, so a revocation made elsewhere is refused."""
    replica = bootstrap.build(settings, url=database_url, pool_size=2)
    try:
        replica.store.start_listener()
        app = create_app(bootstrap.services(replica), extra_routes=[read_probe])
        with TestClient(app=app) as client:
            other = Api(client)
            token = token_of(other)
            assert probe(other, token).status_code == 200
            assert not replica.access.live()
            credential_id = token.split("_")[1]
            assert owner.as_("user:alice").delete(f"{CREDENTIALS}/{credential_id}") \
                .status_code == 204
            expect(probe(other, token), 401, NOT_VALID)
            adams = token_of(other, "user:adam")
            assert probe(other, adams).status_code == 200
            assert owner.as_("user:alice").delete(f"/v1/namespaces/{WS}/members/user:adam") \
                .status_code == 204
            expect(probe(other, adams), 403, {**GONE, "message": GONE["message"]})
    finally:
        replica.close()


def test_views_behind_the_log_answer_503_in_the_api_body(
        owner: Api, container: bootstrap.Container) -> None:
    token = token_of(owner)
    services = owner.client.app.state.services
    container.runner("agent_credentials").stop()
    try:
        token_of(owner)  # an event the stopped views will not reach
        services.read_wait_seconds = 0.05
        resp = probe(owner, token)
        expect(resp, 503, {"code": "SERVICE_UNAVAILABLE",
                           "message": "the service could not catch up with the log in time"})
        assert resp.headers["Retry-After"] == "1"
        assert resp.headers["Cache-Control"] == "no-store"
    finally:
        services.read_wait_seconds = 5.0
