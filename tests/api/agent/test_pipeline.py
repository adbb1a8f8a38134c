"""The bearer pipeline of every agent route (agent-context-api.md §1.5, §1.6, §4.5), through two
probe routes that run only the pipeline (scopes ``context:read`` and ``queries:run``). Each test
is in a workspace of its own on the module's one service; the tests changing the service's clock,
rate limiter or views are in test_pipeline_service_wide.py."""

from __future__ import annotations

from typing import Any

import pytest

from context_service import bootstrap
from context_service.http.agent.ratelimit import RateLimiter
from tests.api.agent.conftest import bearer, probe
from tests.api.agent.workspace_namespaced import owner as owner  # the fixture
from tests.api.agent.workspace_namespaced import token_of
from tests.api.conftest import each, expect
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import credentials
from tests.support.api_helpers import ADMIN, add_member, fresh

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]

REFUSED = {"code": "AGENT_BROWSER_REQUEST_REFUSED",
           "message": "browser requests are refused; call the agent API from a server-side client"}
REQUIRED = {"code": "UNAUTHORIZED", "message": "agent credential is required"}
MALFORMED = {"code": "UNAUTHORIZED", "message": "agent credential is malformed"}
NOT_VALID = {"code": "UNAUTHORIZED", "message": "agent credential is not valid"}
LACKS_RUN = {"code": "FORBIDDEN", "message": 'agent credential lacks scope "queries:run"'}


def gone(ws: str) -> dict[str, str]:
    return {"code": "AGENT_CREDENTIAL_AUTHORITY_LOST",
            "message": f"the credential's creator is no longer a member of workspace \"{ws}\""}


def no_run(ws: str) -> dict[str, str]:
    return {"code": "AGENT_CREDENTIAL_AUTHORITY_LOST",
            "message": "the credential's creator no longer holds \"queries:run\" in workspace "
                       f"\"{ws}\""}


BROWSER_HEADERS = [{"Origin": "https://evil.example"}, {"Origin": ""}, {"Origin": "null"},
                   {"origin": "x"}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Mode": "cors"},
                   {"Sec-Fetch-Dest": "empty"}, {"Sec-Fetch-User": "?1"},
                   {"sec-fetch-anything": "1"}, {"SEC-FETCH-SITE": "same-origin"}]


def test_a_valid_credential_acts_as_its_creator(owner: Namespaced) -> None:
    token = token_of(owner)
    resp = probe(owner, token, headers={"X-Context-Subject": "user:someone-else"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["creator"] == "user:alice" and resp.json()["workspace"] == owner.ns
    assert resp.headers["Cache-Control"] == "no-store"


def test_browser_requests_are_refused_before_anything_else(owner: Namespaced) -> None:
    token = token_of(owner)

    def refused(headers: dict[str, str]) -> None:
        for presented in (token, None, "bdk_garbage"):
            expect(probe(owner, presented, headers=headers), 403, REFUSED)
        resp = owner.client.post("/api/agent/v1/test-probe/read", content=b"not json",
                                 headers={**headers, **bearer(token)})
        expect(resp, 403, REFUSED)

    each(BROWSER_HEADERS, refused)


def test_credential_shape_rules(owner: Namespaced) -> None:
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
        owner: Namespaced, container: bootstrap.Container) -> None:
    token = token_of(owner)
    credential_id = token.split("_")[1]
    other_secret = token_of(owner).split("_", 2)[2]
    expect(probe(owner, "bdk_0123456789abcdef_" + "A" * 43), 401, NOT_VALID)
    expect(probe(owner, f"bdk_{credential_id}_{other_secret}"), 401, NOT_VALID)
    head = container.store.head()
    for forged in (token[:-1], token[:30], token.replace("bdk_", "bdk-"), token + token):
        assert probe(owner, forged).status_code == 401
    assert container.store.head() == head  # a refused request records nothing
    revoke = f"{credentials(owner)}/{credential_id}"
    assert owner.as_("user:alice").delete(revoke).status_code == 204
    expect(probe(owner, token), 401, NOT_VALID)


def test_scope_comes_before_authority(owner: Namespaced) -> None:
    add_member(owner, "user:ann", "admin", caller="user:alice", ws=owner.ns)
    read_only = token_of(owner, "user:ann")
    both = token_of(owner, "user:ann", scopes=["context:read", "queries:run"])
    expect(probe(owner, read_only, "run"), 403, LACKS_RUN)
    assert probe(owner, both, "run").status_code == 200
    add_member(owner, "user:ann", "viewer", caller="user:alice", ws=owner.ns)
    expect(probe(owner, both, "run"), 403, no_run(owner.ns))
    assert probe(owner, both, "read").status_code == 200  # viewers hold context:read
    expect(probe(owner, read_only, "run"), 403, LACKS_RUN)  # scope first, authority second
    members = f"/v1/namespaces/{owner.ns}/members"
    assert owner.as_("user:alice").delete(f"{members}/user:ann").status_code == 204
    expect(probe(owner, both, "read"), 403, gone(owner.ns))
    expect(probe(owner, read_only, "run"), 403, LACKS_RUN)
    # authority comes back with the role; the credential itself never changed
    add_member(owner, "user:ann", "member", caller="user:alice", ws=owner.ns)
    assert probe(owner, both, "run").status_code == 200
    assert probe(owner, both, "read").status_code == 200


def test_the_bootstrap_administrator_always_holds_authority(owner: Namespaced) -> None:
    no_members = fresh("no-members")
    token = token_of(owner, ADMIN, ws=no_members, scopes=["queries:run", "context:read"])
    assert probe(owner, token, "run").status_code == 200
    assert probe(owner, token, "read").json()["workspace"] == no_members


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


def test_removing_a_member_takes_effect_on_the_next_request(owner: Namespaced) -> None:
    add_member(owner, "user:ann", "admin", caller="user:alice", ws=owner.ns)
    token = token_of(owner, "user:ann")
    calls: list[Any] = []
    for _ in range(3):
        add_member(owner, "user:ann", "admin", caller="user:alice", ws=owner.ns)
        calls.append(probe(owner, token).status_code)
        assert owner.as_("user:alice").delete(
            f"/v1/namespaces/{owner.ns}/members/user:ann").status_code == 204
        calls.append(probe(owner, token).status_code)
    assert calls == [200, 403] * 3
