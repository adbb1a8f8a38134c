"""The SDK's own MCP client against the application over Streamable HTTP (an ASGI transport,
so the service's clock and limits can be set): a seeded workspace, credentials of each kind,
and a connection with one bearer credential."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from litestar import Litestar
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from context_service import bootstrap
from context_service.http.app import create_app
from tests.api.agent.packs_corpus import FACTS, NOTES, seed_corpus
from tests.api.agent.templates_support import approve, registered
from tests.api.conftest import Api
from tests.api.sets_support import token

BASE = "http://testserver"
MCP = BASE + "/mcp"
PASSAGES = ("SELECT collection_id, record_id FROM passages"
            " WHERE collection_id = coalesce(:collection, collection_id) ORDER BY 1, 2")


class Workspace:
    """``acme`` with the pack corpus, the set ``finance`` approving one template, and
    credentials: read only, read and run, run only, bound to ``finance``."""

    def __init__(self, api: Api) -> None:
        self.api = api
        seed_corpus(api)
        registered(api, "passages", PASSAGES, [{"name": "collection", "type": "text"}])
        approve(api, ["passages"], collections=(FACTS, NOTES))
        self.reader = token(api)
        self.runner = token(api, ("context:read", "queries:run"))
        self.run_only = token(api, ("queries:run",))
        self.bound = token(api, context_set_id="finance")


def http(app: Litestar, headers: dict[str, str] | None = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE,
                              headers=headers or {}, timeout=60)


@asynccontextmanager
async def connected(app: Litestar, bearer: str | None,
                    headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """An MCP client session with ``bearer`` (none when ``None``)."""
    sent = dict(headers or {})
    if bearer is not None:
        sent["Authorization"] = f"Bearer {bearer}"
    async with http(app, sent) as client, Client(
            streamable_http_client(MCP, http_client=client)) as session:
        yield session


def structured(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


# Module-scoped stand-ins for the conftest's per-test fixtures, for modules whose tests share
# one service (``shared_service``): such a module imports them, and they take the same names.
@pytest.fixture(scope="module", name="workspace")
def module_workspace(module_api: Api) -> Workspace:
    return Workspace(module_api)


@pytest.fixture(scope="module", name="mcp_app")
def module_mcp_app(module_container: bootstrap.Container) -> Litestar:
    """A second application over the module's services (its own MCP lifespan)."""
    return create_app(bootstrap.services(module_container))


# what a client that speaks plain JSON over /mcp asks for
JSON_ONLY = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post_all(app: Litestar, bearer: str, posts: list[tuple[bytes, dict[str, str]]]) -> list[Any]:
    """Each ``(body, headers)`` POSTed to ``/mcp`` in order with ``bearer``; their answers."""
    async def run() -> list[Any]:
        async with app.lifespan(), http(app, {"Authorization": f"Bearer {bearer}"}) as client:
            return [await asyncio.wait_for(client.post("/mcp", content=body, headers=headers), 30)
                    for body, headers in posts]
    return asyncio.run(run())
