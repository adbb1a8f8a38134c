"""Agent API fixtures: workspaces with members, credentials, and an app with two probe routes
that run only the bearer pipeline (one per scope), so the pipeline is tested on its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Request, Response, post
from litestar.testing import TestClient

from context_service import bootstrap
from context_service.http.agent.errors import api_json
from context_service.http.agent.pipeline import authenticate
from context_service.http.app import create_app
from context_service.http.common import threaded
from tests.api.conftest import Api
from tests.support.api_helpers import ADMIN, WS, add_member  # noqa: F401 (the modules import them here)
from tests.support.services import shares_service

CREDENTIALS = f"/api/w/{WS}/agent-credentials"


@post("/api/agent/v1/test-probe/read", status_code=200)
@threaded
def read_probe(request: Request[Any, Any, Any]) -> Response[bytes]:
    caller = authenticate(request, "context:read")
    return api_json({"credential": caller.credential.id, "creator": caller.creator.key,
                     "workspace": caller.workspace})


@post("/api/agent/v1/test-probe/run", status_code=200)
@threaded
def run_probe(request: Request[Any, Any, Any]) -> Response[bytes]:
    caller = authenticate(request, "queries:run")
    return api_json({"credential": caller.credential.id})


@pytest.fixture
def agent_api(request: pytest.FixtureRequest, container: bootstrap.Container) -> Iterator[Api]:
    if shares_service(request):
        yield request.getfixturevalue("module_agent_api")
        return
    app = create_app(bootstrap.services(container), extra_routes=[read_probe, run_probe])
    with TestClient(app=app) as client:
        yield Api(client)


@pytest.fixture(scope="module")
def module_agent_api(module_container: bootstrap.Container) -> Iterator[Api]:
    """``agent_api`` of a ``shared_service`` module: one application over ``module_container``."""
    app = create_app(bootstrap.services(module_container), extra_routes=[read_probe, run_probe])
    with TestClient(app=app) as client:
        yield Api(client)


def create(api: Api, caller: str = "user:alice", ws: str = WS, **body: Any) -> Any:
    payload = {"name": "research agent", "scopes": ["context:read"], "expiresInDays": 30,
               **body}
    return api.as_(caller).post(f"/api/w/{ws}/agent-credentials", payload)


def token_of(api: Api, caller: str = "user:alice", ws: str = WS, **body: Any) -> str:
    resp = create(api, caller, ws, **body)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["token"])


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def probe(api: Api, token: str | None, scope: str = "read",
          headers: dict[str, str] | None = None) -> Any:
    h = dict(headers or {})
    if token is not None:
        h["Authorization"] = f"Bearer {token}"
    return api.client.post(f"/api/agent/v1/test-probe/{scope}", content=b"{}", headers=h)


@pytest.fixture
def owner(agent_api: Api) -> Api:
    """``acme`` with alice (owner), adam (admin), mia (member), vic (viewer)."""
    add_member(agent_api, "user:alice", "owner")
    for subject, role in (("user:adam", "admin"), ("user:mia", "member"),
                          ("user:vic", "viewer")):
        add_member(agent_api, subject, role, caller="user:alice")
    return agent_api
