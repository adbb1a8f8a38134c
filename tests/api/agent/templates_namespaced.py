"""The query-template steps of ``templates_support`` for a workspace of the test's own
(``api.ns``), for modules sharing one service: the same corpus, templates and set."""

from __future__ import annotations

from typing import Any

from tests.api.agent.packs_corpus import FACTS, NOTES, seed_corpus_of
from tests.api.agent.packs_support import Agent
from tests.api.agent.templates_support import template_body
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import sets, token


def templates(api: Namespaced) -> str:
    """The path of the query templates of ``api``'s workspace."""
    return f"/v1/namespaces/{api.ns}/query-templates"


def registered(api: Namespaced, template_id: str, sql: str,
               parameters: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    resp = api.as_("user:alice").post(templates(api),
                                      template_body(template_id, sql, parameters, **extra))
    assert resp.status_code == 201, resp.text
    found: dict[str, Any] = resp.json()
    return found


def approve(api: Namespaced, names: list[str], set_id: str = "finance",
            collections: tuple[str, ...] = (FACTS, NOTES)) -> None:
    """Create (or replace) the set ``set_id`` listing these templates."""
    body = {"id": set_id, "name": "Finance", "collections": list(collections),
            "queryTemplates": names}
    resp = api.as_("user:alice").put(f"{sets(api)}/{set_id}", body)
    if resp.status_code == 404:
        resp = api.as_("user:alice").post(sets(api), body)
    assert resp.status_code in (200, 201), resp.text


def runner(api: Namespaced, creator: str = "user:alice", context_set_id: str = "") -> Agent:
    return Agent(api, token(api, ("queries:run",), context_set_id, creator))


def seeded(api: Namespaced) -> Namespaced:
    seed_corpus_of(api)
    return api
