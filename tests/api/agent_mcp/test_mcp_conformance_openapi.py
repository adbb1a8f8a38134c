"""The typed client's answers and errors against the OpenAPI document the service serves: each
agent route's answer is the client's type, component for component, and each error a route
really answers (provoked here) is one its operation documents, with the pipeline's (a rate
limit, views not caught up) on every agent route: a client generated from the document, or a
developer reading it, learns every error the typed client raises. One service for the module:
its tests only read the seeded workspace."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from context_service.client import routes
from context_service.contract import agent as c
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import Workspace
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REPLAY = routes.API + "/replays/{replayId}"
ANSWERS: dict[str, Any] = {  # what the client decodes each route's answer into
    routes.PACKS: c.ContextPack, REPLAY: c.Replay, routes.SETS_LIST: c.ContextSetList,
    routes.SETS_GET: c.AgentContextSet, routes.LOOKUP: c.DefinitionMatches,
    routes.MATCH: c.AnswerMatches, routes.FIELDS_LIST: c.FieldListing,
    routes.FIELDS_QUERY: c.FieldAnswer, routes.RUN: c.TemplateRows,
    routes.STREAM: c.ContextPackLines}
# what each route answers a body naming what is not there (the route's own 404)
ABSENT: dict[str, dict[str, Any]] = {
    routes.PACKS: {"task": "x", "contextSetId": "nope"},
    routes.STREAM: {"task": "x", "contextSetId": "nope"},
    routes.SETS_GET: {"contextSetId": "nope"},
    routes.LOOKUP: {"term": "x", "contextSetId": "nope"},
    routes.MATCH: {"question": "x", "contextSetId": "nope"},
    routes.FIELDS_LIST: {"collectionId": "nope"},
    routes.FIELDS_QUERY: {"collectionId": "nope", "fields": ["a"]},
    routes.RUN: {"templateId": "nope", "contextSetId": "finance"},
}
PIPELINE = ("429", "503")  # every agent route's, past its credential (§1.5, §1.6)


def _document(workspace: Workspace) -> dict[str, Any]:
    resp = workspace.api.get("/schema/openapi.json")
    assert resp.status_code == 200
    document: dict[str, Any] = resp.json()
    return document


def test_every_answer_is_the_clients_type_component_for_component(
        workspace: Workspace) -> None:
    document = _document(workspace)
    components = document["components"]["schemas"]
    for path, answer in ANSWERS.items():
        assert "200" in document["paths"][path]["post"]["responses"], path
        _, wanted = msgspec.json.schema_components(
            [answer], ref_template="#/components/schemas/{name}")
        for name, schema in wanted.items():
            assert components.get(name) == schema, (path, name)


def _provoked(workspace: Workspace, path: str, bearer: str | None) -> set[str]:
    """The error statuses ``path`` answers: a body that is no object, no credential, a
    browser's request, and (where the route names one) what is not there."""
    agent = workspace.api.as_(None)
    auth = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    concrete = path.replace("{replayId}", "rp_" + "0" * 32)
    answers = [agent.post(concrete, raw=b"[]", headers=auth),
               agent.post(concrete, {}),
               agent.post(concrete, {}, headers={**auth, "Origin": "https://evil.example"})]
    if path in ABSENT or path == REPLAY:
        answers.append(agent.post(concrete, ABSENT.get(path, {"mode": "verify"}), headers=auth))
    return {str(resp.status_code) for resp in answers}


def test_every_error_a_route_answers_is_documented_for_it(workspace: Workspace) -> None:
    document = _document(workspace)
    undocumented = {}
    for path in ANSWERS:
        documented = set(document["paths"][path]["post"]["responses"])
        provoked = _provoked(workspace, path, workspace.runner)
        assert provoked >= {"400", "401", "403"}, (path, provoked)
        missing = (provoked | set(PIPELINE)) - documented
        if missing:
            undocumented[path] = sorted(missing)
    assert undocumented == {}
