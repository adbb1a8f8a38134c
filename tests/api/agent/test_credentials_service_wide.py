"""Agent credential management over HTTP on a service of the test's own (agent-context-api.md
§4.1-§4.3): the tests that change the service's subject rule or its credentials' clock. The
other credential tests share one service (test_credentials.py)."""

from __future__ import annotations

from datetime import timedelta

from context_service import bootstrap
from tests.api.agent.conftest import CREDENTIALS, create
from tests.api.conftest import Api, expect


def test_subject_header_on_api_routes(owner: Api, container: bootstrap.Container) -> None:
    malformed = owner.as_("robot:x").get(CREDENTIALS)
    expect(malformed, 400, {"code": "INVALID_REQUEST", "message":
                            "X-Context-Subject must be kind:name with kind user, agent, "
                            "workload or service"})
    services = owner.client.app.state.services
    services.require_subject = True
    try:
        expect(owner.as_(None).get(CREDENTIALS), 401,
               {"code": "UNAUTHORIZED", "message": "X-Context-Subject is required"})
    finally:
        services.require_subject = False


def test_expired_credentials_do_not_count(owner: Api, container: bootstrap.Container) -> None:
    for i in range(50):
        assert create(owner, name=f"c{i}", expiresInDays=1).status_code == 201
    agent = owner.client.app.state.services.agent
    real = agent.clock
    agent.clock = container.credentials.clock = lambda: real() + timedelta(days=1, seconds=1)
    try:
        assert create(owner).status_code == 201
        statuses = {i["status"] for i in owner.as_("user:alice").get(CREDENTIALS).json()["items"]}
        assert statuses == {"expired", "active"}
    finally:
        agent.clock = container.credentials.clock = real
