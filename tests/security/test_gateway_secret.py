"""``CS_GATEWAY_SECRET``: with it set, a request carrying ``X-Context-Subject`` must carry the
gateway's proof (``X-Gateway-Secret``), else ``401``; otherwise any pod that reaches the API could
act as any subject, the bootstrap administrator included.

The tests marked ``shared_service`` share one service (the secret set in ``module_settings``),
each in a workspace of its own; the one building a service without the secret needs no
running one."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.config import Settings
from tests.api.conftest import Api
from tests.support.api_helpers import fresh

shared = pytest.mark.shared_service  # the test's workspace is its own
SECRET = "gateway-proof-9f2c41d7e0b84a6c"
ADMIN = "service:context-service-admin"
MEMBERS = "/v1/namespaces/acme/members"  # on the service built without the secret
UNPROVEN = ("X-Context-Subject is accepted only from the gateway: "
            "X-Gateway-Secret is missing or wrong")
ALICE = {"subject": {"kind": "user", "name": "alice"}, "role": "owner"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, gateway_secret=SECRET)


@pytest.fixture(scope="module")
def module_settings(module_settings: Settings) -> Settings:
    return dataclasses.replace(module_settings, gateway_secret=SECRET)


@pytest.fixture
def ws() -> str:
    """The test's workspace (``acme`` in the text): a name no other test uses."""
    return fresh("acme")


def members(ws: str) -> str:
    return f"/v1/namespaces/{ws}/members"


def proof(value: str = SECRET) -> dict[str, str]:
    return {"X-Gateway-Secret": value}


@shared
def test_a_pod_claiming_the_administrator_without_the_proof_is_refused(
        api: Api, container: bootstrap.Container, ws: str) -> None:
    head = container.store.head()
    answers = [api.as_(ADMIN).put(members(ws), ALICE, headers=headers)
               for headers in ({}, proof(""), proof(SECRET[:-1]), proof(SECRET + "x"),
                               proof(SECRET.upper()))]
    answers.append(api.client.put(members(ws), json=ALICE, headers=[
        # not ASCII: still compared
        (b"X-Context-Subject", ADMIN.encode()),
        (b"X-Gateway-Secret", SECRET[:-1].encode() + b"\xe7")]))
    for answer in answers:
        assert answer.status_code == 401, answer.text
        assert answer.json() == {"error": "unauthenticated", "message": UNPROVEN}
    assert container.store.head() == head  # nothing was recorded
    assert api.as_(ADMIN).put(members(ws), ALICE, headers=proof()).status_code == 200
    answer = api.as_("user:alice").get("/v1/workspaces", headers=proof())
    assert answer.json()["subject"] == {"kind": "user", "name": "alice"}


@shared
def test_every_reader_of_the_subject_asks_for_the_proof(api: Api, ws: str) -> None:
    assert api.as_(ADMIN).put(members(ws), ALICE, headers=proof()).status_code == 200
    unproven: list[Any] = [
        api.as_("user:alice").get("/v1/workspaces"),
        api.as_("user:alice").get(f"/v1/namespaces/{ws}/contexts"),
        api.as_(" ").get(f"/v1/namespaces/{ws}/contexts"),  # an empty claim is still a claim
    ]
    for answer in unproven:
        assert answer.status_code == 401, answer.text
        assert answer.json() == {"error": "unauthenticated", "message": UNPROVEN}
    created = api.as_("user:alice").post(f"/api/w/{ws}/agent-credentials", {
        "name": "agent", "scopes": ["context:read"], "expiresInDays": 30})
    assert created.status_code == 401
    assert created.json() == {"code": "UNAUTHORIZED", "message": UNPROVEN}
    assert created.headers["Cache-Control"] == "no-store"


@shared
def test_without_the_header_the_caller_is_anonymous_and_agents_ignore_it(api: Api,
                                                                         ws: str) -> None:
    assert api.get(f"/v1/namespaces/{ws}/contexts").status_code == 200  # no claim, no proof
    assert api.as_(ADMIN).put(members(ws), ALICE, headers=proof()).status_code == 200
    created = api.as_("user:alice").post(f"/api/w/{ws}/agent-credentials", {
        "name": "agent", "scopes": ["context:read"], "expiresInDays": 30}, headers=proof())
    assert created.status_code == 201, created.text
    token = created.json()["token"]
    # the agent API ignores X-Context-Subject (the credential is the caller): no proof needed
    answer = api.client.post("/api/agent/v1/fields/query", content=b"{}", headers={
        "Authorization": f"Bearer {token}", "X-Context-Subject": ADMIN})
    assert answer.status_code != 401, answer.text


def test_without_the_setting_the_header_is_trusted_as_before(
        settings: Settings, database_url: str) -> None:
    built = bootstrap.build(dataclasses.replace(settings, gateway_secret=""),
                            url=database_url, pool_size=2)
    try:
        with TestClient(app=bootstrap.app(built)) as client:
            answer = Api(client).as_(ADMIN).put(MEMBERS, ALICE)
            assert answer.status_code == 200, answer.text
    finally:
        built.close()
