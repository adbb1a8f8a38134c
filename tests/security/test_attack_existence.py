"""Existence hiding, attacked from a valid credential of low scope: for every agent route that
names a collection, a context set, a template or a replay, a name the caller may not see and a
name that does not exist must answer byte for byte alike (agent-context-api §1.3), over HTTP and
through the MCP tools that call the same routes, once the name itself is set aside.

Hidden names: ``notes`` (a collection of acme its creator adam may not read), ``company-facts``
``globex-only`` of globex (another workspace), globex's set ``finance``, an archived set of acme, a
template of acme the set does not list, a retired one, and a replay of globex.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from context_service import bootstrap
from context_service.config import Settings
from tests.api.agent.packs_corpus import NOTES, pack_body
from tests.api.agent.packs_support import create_context, publish, record
from tests.api.agent.templates_support import approve, registered, seeded
from tests.api.agent.test_replays_rules import TASK, fresh_rid
from tests.api.agent.test_replays_rules import record as record_release
from tests.api.conftest import Api
from tests.api.sets_support import token
from tests.support.services import suite_settings

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
API = "/api/agent/v1"
GLOBEX = "globex"
GLOBEX_ONLY = "globex-only"
ABSENT = "no-such-name"
MCP = {"Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def module_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return replace(suite_settings(tmp_path_factory.mktemp("attack-existence")),
                   agent_rate_per_second=0)


@pytest.fixture(scope="module")
def world(module_api: Api) -> Iterator[dict[str, str]]:
    api = module_api
    seeded(api)
    registered(api, "listed", "SELECT count(*) AS n FROM passages")
    registered(api, "unlisted", "SELECT count(*) AS n FROM passages")
    registered(api, "retired", "SELECT count(*) AS n FROM passages")
    approve(api, ["listed", "retired"])
    approve(api, ["listed"], set_id="old")
    assert api.as_("user:alice").delete(
        "/v1/namespaces/acme/query-templates/retired").status_code == 204
    assert api.as_("user:alice").delete("/v1/namespaces/acme/context-sets/old").status_code \
        == 204
    admin = api.as_("service:context-service-admin")
    assert admin.put(f"/v1/namespaces/{GLOBEX}/members", {
        "subject": {"kind": "user", "name": "gina"}, "role": "owner"}).status_code == 200
    create_context(api, GLOBEX_ONLY, owner="user:gina", ws=GLOBEX)
    publish(api, GLOBEX_ONLY, "a" * 64, [record("g1", GLOBEX_ONLY, "a" * 64, "globex only")],
            owner="user:gina", ws=GLOBEX)
    assert api.as_("user:gina").post(f"/v1/namespaces/{GLOBEX}/context-sets", {
        "id": "globex-set", "name": "G", "collections": [GLOBEX_ONLY]}).status_code == 201
    # adam (admin of acme) reads company-facts but not notes
    yield {"token": token(api, ("context:read", "queries:run"), creator="user:adam")}


def post(api: Api, bearer: str, path: str, body: dict[str, Any]) -> tuple[int, str]:
    resp = api.as_(None).post(path, body, headers={"Authorization": f"Bearer {bearer}"})
    return resp.status_code, resp.text


def tool(api: Api, bearer: str, name: str, arguments: dict[str, Any]) -> tuple[int, str]:
    resp = api.as_(None).post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": name, "arguments": arguments}},
                              headers={"Authorization": f"Bearer {bearer}", **MCP})
    text = resp.text
    match = re.search(r"^data: (.*)$", text, re.M)  # an event stream, or the JSON itself
    return resp.status_code, match.group(1) if match else text


def alike(answers: dict[str, tuple[int, str]]) -> None:
    """Every answer equal to the absent name's once each name is replaced by a marker."""
    def plain(name: str, answer: tuple[int, str]) -> tuple[int, str]:
        return answer[0], answer[1].replace(json.dumps(name)[1:-1], "<name>")

    expected = plain(ABSENT, answers[ABSENT])
    assert expected[0] == 404 or '"isError":true' in expected[1], answers[ABSENT]
    for name, answer in answers.items():
        assert plain(name, answer) == expected, (name, answer, answers[ABSENT])


COLLECTIONS = (NOTES, GLOBEX_ONLY, ABSENT)


def test_a_hidden_collection_answers_as_an_absent_one(module_api: Api,
                                                      world: dict[str, str]) -> None:
    bearer = world["token"]
    count = {"aggregate": {"functions": [{"op": "count"}]}}
    for path, extra in ((f"{API}/fields/list", {}), (f"{API}/fields/query", count)):
        alike({c: post(module_api, bearer, path, {"collectionId": c, **extra})
               for c in COLLECTIONS})
    alike({c: post(module_api, bearer, f"{API}/context-packs",
                   pack_body(filters={"collectionIds": [c]})) for c in COLLECTIONS})
    for name, extra in (("list_fields", {}), ("query_fields", count)):
        alike({c: tool(module_api, bearer, name, {"collectionId": c, **extra})
               for c in COLLECTIONS})


def test_a_hidden_context_set_answers_as_an_absent_one(module_api: Api,
                                                       world: dict[str, str]) -> None:
    bearer = world["token"]
    sets = ("globex-set", "old", ABSENT)
    alike({s: post(module_api, bearer, f"{API}/context-sets/get", {"contextSetId": s})
           for s in sets})
    alike({s: post(module_api, bearer, f"{API}/query-templates/run",
                   {"templateId": "listed", "contextSetId": s}) for s in sets})
    alike({s: post(module_api, bearer, f"{API}/context-packs", pack_body(contextSetId=s))
           for s in sets})
    alike({s: tool(module_api, bearer, "get_context_set", {"contextSetId": s}) for s in sets})
    alike({s: tool(module_api, bearer, "run_query_template",
                   {"templateId": "listed", "contextSetId": s}) for s in sets})


def test_a_hidden_template_answers_as_an_absent_one(module_api: Api,
                                                    world: dict[str, str]) -> None:
    bearer = world["token"]
    templates = ("unlisted", "retired", ABSENT)
    alike({t: post(module_api, bearer, f"{API}/query-templates/run",
                   {"templateId": t, "contextSetId": "finance"}) for t in templates})
    alike({t: tool(module_api, bearer, "run_query_template",
                   {"templateId": t, "contextSetId": "finance"}) for t in templates})


def test_a_replay_of_another_workspace_answers_as_an_absent_one(
        module_api: Api, module_container: bootstrap.Container,
        world: dict[str, str]) -> None:
    """Live or expired there (an expired replay of acme's own answers 410), a replay of globex
    is a 404 like an unknown id, over HTTP and through ``replay_pack``."""
    live, expired = fresh_rid(), fresh_rid()
    record_release(module_container, ws=GLOBEX, replay_id=live)
    ends = record_release(module_container, ws=GLOBEX, replay_id=expired,
                  retention=timedelta(milliseconds=1))
    time.sleep(max(0.0, (ends - datetime.now(UTC)).total_seconds()) + 0.05)
    bearer, absent = world["token"], fresh_rid()
    for mode in ("verify", "recompute"):
        body = {"mode": mode, "task": TASK}
        answers = {r: post(module_api, bearer, f"{API}/replays/{r}", body)
                   for r in (live, expired, absent)}
        alike({**{k: v for k, v in answers.items() if k != absent}, ABSENT: answers[absent]})
        answers = {r: tool(module_api, bearer, "replay_pack", {"replayId": r, **body})
                   for r in (live, expired, absent)}
        alike({**{k: v for k, v in answers.items() if k != absent}, ABSENT: answers[absent]})
