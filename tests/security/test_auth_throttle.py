"""Failed authentication on ``/api/agent/v1`` is throttled per client address (429
``RATE_LIMITED`` with ``Retry-After`` past ``CS_AUTH_FAILURE_BURST``, refused before the credential
is looked at), independently of the per-credential limit; an unknown credential id costs no
database query and the same keyed hash as a known id with a wrong secret."""

from __future__ import annotations

import dataclasses
import math
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar
from litestar.testing import TestClient
from litestar.types import ASGIApp, Receive, Scope, Send

from context_service import bootstrap
from context_service.config import Settings
from context_service.domain.agent_credentials import token as token_module
from context_service.http.agent.ratelimit import AuthFailures, address_key
from context_service.http.app import create_app
from tests.api.agent.conftest import add_member, read_probe, run_probe, token_of
from tests.api.conftest import Api

BURST, RATE = 20, 2.0
NOT_VALID = {"code": "UNAUTHORIZED", "message": "agent credential is not valid"}
PEER = "x-test-peer"  # the test client sets the connection's peer address through this header


def unknown_token() -> str:
    return f"bdk_{secrets.token_hex(8)}_{secrets.token_urlsafe(32)}"


def with_peers(app: ASGIApp) -> ASGIApp:
    """The app as reached from several addresses: ``x-test-peer`` becomes the ASGI client."""

    async def call(scope: Scope, receive: Receive, send: Send) -> None:
        found: Any = scope
        if found["type"] == "http":
            for name, value in found["headers"]:
                if name == PEER.encode():
                    found = {**found, "client": (value.decode(), 40000)}
        await app(found, receive, send)

    return call


class CountingReads:
    """The access directory's view reads, counted."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.credential_reads = 0

    def credential(self, credential_id: str) -> Any:
        self.credential_reads += 1
        return self.inner.credential(credential_id)

    def role(self, namespace: str, subject: Any) -> Any:
        return self.inner.role(namespace, subject)


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # the defaults of CS_AUTH_FAILURE_*; the per-credential limit is off, which must not matter
    return dataclasses.replace(settings, auth_failure_burst=BURST,
                               auth_failure_per_second=RATE, agent_rate_per_second=0.0)


@pytest.fixture
def app(container: bootstrap.Container) -> Litestar:
    return create_app(bootstrap.services(container), extra_routes=[read_probe, run_probe])


@pytest.fixture
def api(app: Litestar) -> Iterator[Api]:
    with TestClient(app=with_peers(app)) as client:
        yield Api(client)


@pytest.fixture
def clock(app: Litestar) -> list[float]:
    """The throttle's clock, moved by hand."""
    now = [1000.0]
    found: AuthFailures = app.state.services.auth_failures
    found.clock = lambda: now[0]
    return now


@pytest.fixture
def reads(container: bootstrap.Container) -> CountingReads:
    counting = CountingReads(container.access.reads)
    container.access.reads = counting
    return counting


def probe(api: Api, token: str | None, peer: str = "192.0.2.10", scope: str = "read") -> Any:
    headers = {PEER: peer}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return api.client.post(f"/api/agent/v1/test-probe/{scope}", content=b"{}", headers=headers)


def metric(api: Api, name: str) -> float:
    text = api.client.get("/metrics").text
    [line] = [x for x in text.splitlines() if x.split(" ")[0] == name]
    return float(line.split(" ")[1])


def test_unknown_credentials_in_a_burst_are_throttled_without_database_reads(
        api: Api, clock: list[float], reads: CountingReads) -> None:
    answers = [probe(api, unknown_token()) for _ in range(300)]
    statuses = [a.status_code for a in answers]
    assert statuses == [401] * BURST + [429] * (300 - BURST)
    assert answers[0].json() == NOT_VALID
    refused = answers[-1]
    assert refused.json() == {
        "code": "RATE_LIMITED",
        "message": "too many failed authentications; retry after 1 seconds"}
    assert refused.headers["Retry-After"] == "1"
    assert refused.headers["Cache-Control"] == "no-store"
    assert reads.credential_reads == 0  # unknown ids answered from memory
    assert metric(api, "cs_auth_failure_refusals_total") == 300 - BURST
    assert metric(api, "cs_auth_failure_buckets") == 1
    # the bucket refills at CS_AUTH_FAILURE_PER_SECOND: one more try every 1 / RATE seconds
    clock[0] += 1 / RATE
    assert [probe(api, unknown_token()).status_code for _ in range(2)] == [401, 429]


def test_a_throttled_address_is_refused_before_its_credential_is_looked_at(
        api: Api, clock: list[float], reads: CountingReads) -> None:
    good = token_of(api, "service:context-service-admin", ws="acme")
    for _ in range(BURST):
        assert probe(api, unknown_token()).status_code == 401
    before = reads.credential_reads
    for presented in (good, None, "nonsense", unknown_token()):
        answer = probe(api, presented)
        assert answer.status_code == 429, presented
        assert answer.headers["Retry-After"] == str(math.ceil(1 / RATE))
    assert reads.credential_reads == before
    # another address is not affected, and its successes never fill the first one's debt
    assert [probe(api, good, peer="192.0.2.11").status_code for _ in range(50)] == [200] * 50
    assert probe(api, good).status_code == 429
    clock[0] += BURST / RATE  # a full bucket again
    assert probe(api, good).status_code == 200


def test_only_failed_credentials_count_and_the_credential_limit_is_apart(
        api: Api, clock: list[float]) -> None:
    add_member(api, "user:alice", "owner")
    good = token_of(api)
    readonly_run = [probe(api, good, scope="run").status_code for _ in range(3 * BURST)]
    assert readonly_run == [403] * (3 * BURST)  # scope refusals are not failed authentication
    assert [probe(api, good).status_code for _ in range(3 * BURST)] == [200] * (3 * BURST)
    missing = [probe(api, None).status_code for _ in range(BURST + 1)]
    assert missing == [401] * BURST + [429]


def test_an_unknown_id_costs_the_keyed_hash_of_a_known_id_with_a_wrong_secret(
        api: Api, clock: list[float], reads: CountingReads,
        monkeypatch: pytest.MonkeyPatch) -> None:
    add_member(api, "user:alice", "owner")
    good = token_of(api)
    wrong = good[:-43] + secrets.token_urlsafe(32)
    assert probe(api, good).status_code == 200  # the credential is held in memory now
    hashed: list[str] = []
    real = token_module.secret_hash

    def counted(key: bytes, token: str) -> str:
        hashed.append(token)
        return real(key, token)

    monkeypatch.setattr(token_module, "secret_hash", counted)
    before = reads.credential_reads
    unknown = unknown_token()
    assert probe(api, unknown).json() == NOT_VALID
    assert probe(api, wrong).json() == NOT_VALID
    assert hashed == [unknown, wrong]  # one keyed hash each
    assert reads.credential_reads == before  # neither read the database


def test_a_credential_created_just_before_the_request_is_found(
        api: Api, clock: list[float], reads: CountingReads) -> None:
    add_member(api, "user:alice", "owner")
    assert probe(api, unknown_token()).status_code == 401  # the directory knows every id now
    for _ in range(3):
        fresh = token_of(api)
        answer = probe(api, fresh)
        assert answer.status_code == 200, answer.text


def test_the_failure_buckets_are_bounded_and_ipv6_counts_per_prefix() -> None:
    now = [0.0]
    table = AuthFailures(RATE, 2, clock=lambda: now[0], capacity=100)
    for i in range(10_000):
        table.failed(f"10.0.{i // 256}.{i % 256}")
    assert len(table) == 100
    for host in range(5):
        table.failed(f"2001:db8:1:2::{host}")
    assert table.refusal("2001:db8:1:2:ffff::1") == 1  # the same /64: one bucket
    assert table.refusal("2001:db8:1:3::1") == 0
    assert address_key("::ffff:192.0.2.1") == "192.0.2.1"
    assert table.refusal("10.0.0.0") == 0  # the oldest went first
    off = AuthFailures(0.0, 1)
    for _ in range(10):
        off.failed("192.0.2.1")
    assert off.refusal("192.0.2.1") == 0 and len(off) == 0
