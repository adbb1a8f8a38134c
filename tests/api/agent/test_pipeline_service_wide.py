"""The bearer pipeline of the agent routes on a service of the test's own (agent-context-api.md
§1.5, §1.6, §4.5): the tests that change the service's clock, rate limiter or views, or build a
second container over its database. The other pipeline tests share one service
(test_pipeline.py)."""

from __future__ import annotations

from datetime import datetime, timedelta

from litestar.testing import TestClient

from context_service import bootstrap
from context_service.config import Settings
from context_service.http.agent.ratelimit import RateLimiter
from context_service.http.app import create_app
from tests.api.agent.conftest import CREDENTIALS, probe, read_probe, token_of
from tests.api.conftest import Api, expect
from tests.support.api_helpers import WS

NOT_VALID = {"code": "UNAUTHORIZED", "message": "agent credential is not valid"}
EXPIRED = {"code": "EXPIRED_CREDENTIAL", "message": "agent credential has expired"}
GONE = {"code": "AGENT_CREDENTIAL_AUTHORITY_LOST",
        "message": "the credential's creator is no longer a member of workspace \"acme\""}


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
