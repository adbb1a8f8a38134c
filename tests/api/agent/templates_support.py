"""Shared setup of the query-template tests: the pack corpus (``company-facts`` readable by
alice and adam, ``notes`` alice's only), templates registered by alice, a set approving them,
and a client running them with one bearer credential."""

from __future__ import annotations

from typing import Any

from tests.api.agent.packs_corpus import FACTS, NOTES, seed_corpus
from tests.api.agent.packs_support import Agent
from tests.api.conftest import Api
from tests.api.sets_support import SETS, WORKSPACE, token

TEMPLATES = f"/v1/namespaces/{WORKSPACE}/query-templates"
RUN = "/api/agent/v1/query-templates/run"


def template_body(template_id: str, sql: str, parameters: list[dict[str, Any]] | None = None,
                  **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"id": template_id, "description": f"template {template_id}",
                            "sql": sql, **extra}
    if parameters is not None:
        body["parameters"] = parameters
    return body


def register(api: Api, template_id: str, sql: str,
             parameters: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    return api.as_("user:alice").post(TEMPLATES, template_body(template_id, sql, parameters,
                                                               **extra))


def registered(api: Api, template_id: str, sql: str,
               parameters: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    resp = register(api, template_id, sql, parameters, **extra)
    assert resp.status_code == 201, resp.text
    found: dict[str, Any] = resp.json()
    return found


def approve(api: Api, templates: list[str], set_id: str = "finance",
            collections: tuple[str, ...] = (FACTS, NOTES)) -> None:
    """Create (or replace) the set ``set_id`` listing these templates."""
    body = {"id": set_id, "name": "Finance", "collections": list(collections),
            "queryTemplates": templates}
    resp = api.as_("user:alice").put(f"{SETS}/{set_id}", body)
    if resp.status_code == 404:
        resp = api.as_("user:alice").post(SETS, body)
    assert resp.status_code in (200, 201), resp.text


def runner(api: Api, creator: str = "user:alice", context_set_id: str = "") -> Agent:
    return Agent(api, token(api, ("queries:run",), context_set_id, creator))


def run(agent: Agent, template_id: str, parameters: dict[str, Any] | None = None,
        set_id: str | None = "finance") -> Any:
    body: dict[str, Any] = {"templateId": template_id}
    if parameters is not None:
        body["parameters"] = parameters
    if set_id is not None:
        body["contextSetId"] = set_id
    return agent.api.post(RUN, body, headers={"Authorization": f"Bearer {agent.token}"})


def seeded(api: Api) -> Api:
    seed_corpus(api)
    return api
