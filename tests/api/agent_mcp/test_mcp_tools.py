"""The agent tools over MCP (Streamable HTTP at ``/mcp``) with the SDK's own client: the tools
listed per scope and bound set, their schemas generated from the contract Structs, every tool
answered by its route with the route's answer, a pack identical to the HTTP one byte for byte,
and the agent API's errors as tool errors."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from litestar import Litestar

from context_service.contract import agent as c
from context_service.contract import tools as catalogue
from tests.api.agent.packs_corpus import FACTS, TASK, pack_body
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import (
    Workspace,
    connected,
    structured,
)
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

# one service and one seeded workspace for the module: its tests only read the workspace (a
# pack or replay they release is their own; no test counts them)
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
AGENT = "/api/agent/v1"
ALL = [tool.name for tool in catalogue.TOOLS]
CALLS: dict[str, tuple[str, dict[str, Any]]] = {  # a call of each read-only tool, and its route
    "list_context_sets": ("/context-sets/list", {"query": "finance"}),
    "get_context_set": ("/context-sets/get", {"contextSetId": "finance"}),
    "lookup_definitions": ("/definitions/lookup", {"term": "CFO"}),
    "match_verified_answers": ("/verified-answers/match", {"question": "Who is the CFO?"}),
    "list_fields": ("/fields/list", {"collectionId": FACTS}),
    "query_fields": ("/fields/query", {"collectionId": FACTS,
                                       "aggregate": {"functions": [{"op": "count"}]}}),
    "run_query_template": ("/query-templates/run", {"templateId": "passages",
                                                    "contextSetId": "finance"}),
}


def _http(workspace: Workspace, bearer: str, path: str, body: dict[str, Any]) -> Any:
    return workspace.api.as_(None).post(AGENT + path, body,
                                        headers={"Authorization": f"Bearer {bearer}"})


def test_tools_are_listed_per_scope_and_bound_set(workspace: Workspace,
                                                  mcp_app: Litestar) -> None:
    async def listing(bearer: str) -> tuple[list[Any], str | None]:
        async with mcp_app.lifespan(), connected(mcp_app, bearer) as client:
            return (await client.list_tools()).tools, client.instructions

    reader, instructions = asyncio.run(listing(workspace.reader))
    assert [t.name for t in reader] == ALL[:-1]  # no run_query_template without queries:run
    assert instructions is not None and '"untrusted"' in instructions
    assert "cite" in instructions.lower() and "replay" in instructions.lower()
    runner, _ = asyncio.run(listing(workspace.runner))
    assert [t.name for t in runner] == ALL
    only_run, _ = asyncio.run(listing(workspace.run_only))
    assert [t.name for t in only_run] == ["run_query_template"]
    bound, _ = asyncio.run(listing(workspace.bound))
    described = {t.name: t.description or "" for t in bound}
    assert "bound to context set 'finance'" in described["context_pack"]
    assert "bound to" not in described["list_fields"]  # it names no context set
    assert all("bound to" not in (t.description or "") for t in reader)


def test_schemas_and_annotations_come_from_the_contract(workspace: Workspace,
                                                        mcp_app: Litestar) -> None:
    async def listing() -> list[Any]:
        async with mcp_app.lifespan(), connected(mcp_app, workspace.runner) as client:
            return (await client.list_tools()).tools

    for tool in asyncio.run(listing()):
        entry = catalogue.BY_NAME[tool.name]
        assert tool.input_schema == catalogue.schema(entry.request)
        assert tool.output_schema == catalogue.output_schema(entry.answer)
        assert tool.input_schema["type"] == tool.output_schema["type"] == "object"
        assert "$ref" not in str(tool.output_schema)  # every definition in place
        assert "#/$defs" not in str(tool.output_schema)  # nor named (a discriminator's mapping)
        generated = msgspec.json.schema(entry.answer)
        if "$ref" in generated:  # the answer's own properties, their references resolved
            root = generated["$defs"][generated["$ref"].rsplit("/", 1)[1]]
            assert list(tool.output_schema["properties"]) == list(root["properties"])
        else:  # a union of answers
            assert len(tool.output_schema["anyOf"]) == len(generated["anyOf"])
        fields = msgspec.structs.fields(entry.request)
        assert list(tool.input_schema["properties"]) == [f.encode_name for f in fields]
        assert tool.input_schema.get("required", []) == list(entry.request.REQUIRED)
        assert all("null" not in str(p) for p in tool.input_schema["properties"].values())
        assert tool.annotations.read_only_hint is entry.read_only
        assert tool.annotations.destructive_hint is False
    read_only = {t.name for t in catalogue.TOOLS if t.read_only}
    assert read_only == set(CALLS)  # packs and replays record what they release and check


def test_each_tool_answers_as_its_route(workspace: Workspace, mcp_app: Litestar) -> None:
    async def calls() -> dict[str, Any]:
        async with mcp_app.lifespan(), connected(mcp_app, workspace.runner) as client:
            return {name: await client.call_tool(name, body)
                    for name, (_, body) in CALLS.items()}

    answers = asyncio.run(calls())
    for name, (path, body) in CALLS.items():
        resp = _http(workspace, workspace.runner, path, body)
        assert resp.status_code == 200, resp.text
        answer = structured(answers[name])
        assert answer == resp.json(), name
        assert msgspec.json.decode(answers[name].content[0].text) == answer
        msgspec.convert(answer, catalogue.BY_NAME[name].answer)  # the declared answer type
    rows = structured(answers["run_query_template"])
    assert rows["rowCount"] == len(rows["rows"]) > 0


def test_a_pack_through_mcp_is_the_pack_through_http(workspace: Workspace,
                                                     mcp_app: Litestar) -> None:
    body = pack_body()

    async def run() -> tuple[Any, Any, Any]:
        async with mcp_app.lifespan(), connected(mcp_app, workspace.reader) as client:
            pack = await client.call_tool("context_pack", body)
            replay_id = structured(pack)["replayId"]
            verified = await client.call_tool("replay_pack", {"replayId": replay_id,
                                                              "mode": "verify"})
            recomputed = await client.call_tool("replay_pack", {
                "replayId": replay_id, "mode": "recompute", "task": TASK})
            return pack, verified, recomputed

    pack, verified, recomputed = asyncio.run(run())
    resp = _http(workspace, workspace.reader, "/context-packs", body)
    assert resp.status_code == 200, resp.text
    assert msgspec.json.encode(structured(pack)) == resp.content  # same ids, same bytes
    text = pack.content[0].text
    first = structured(pack)["items"][0]
    assert text.startswith(f"Context pack {first and structured(pack)['packId']}")
    assert f"[{first['id']}] {first['class']}, trust={first['trust']}" in text
    assert first["text"] in text
    check = structured(verified)
    assert check["mode"] == "verify" and check["matches"] is True
    again = structured(recomputed)
    assert again["mode"] == "recompute" and again["diff"]["changed"] == []
    assert again["pack"]["packId"] == structured(pack)["packId"]
    msgspec.convert(check, c.Replay)
    msgspec.convert(again, c.Replay)


def test_errors_are_tool_errors_with_the_api_code(workspace: Workspace,
                                                  mcp_app: Litestar) -> None:
    async def run() -> list[Any]:
        async with mcp_app.lifespan(), connected(mcp_app, workspace.reader) as client:
            return [await client.call_tool("context_pack", {"budget": {"maxTokens": 1}}),
                    await client.call_tool("run_query_template", {"templateId": "passages"}),
                    await client.call_tool("replay_pack", {"replayId": "rp_" + "0" * 32,
                                                           "mode": "verify"}),
                    await client.call_tool("replay_pack", {"replayId": "../context-packs",
                                                           "mode": "verify"}),
                    await client.call_tool("get_context_set", {"contextSetId": "nope"})]

    invalid, forbidden, unknown, bad_id, no_set = asyncio.run(run())
    assert all(r.is_error for r in (invalid, forbidden, unknown, bad_id, no_set))
    resp = _http(workspace, workspace.reader, "/context-packs", {"budget": {"maxTokens": 1}})
    assert invalid.structured_content == resp.json()  # code, message and every detail
    assert invalid.content[0].text.startswith("VALIDATION_ERROR: request validation failed\n")
    assert forbidden.structured_content == {
        "code": "FORBIDDEN", "message": 'agent credential lacks scope "queries:run"'}
    assert unknown.structured_content == {"code": "NOT_FOUND", "message": "replay not found"}
    assert bad_id.structured_content["code"] == "VALIDATION_ERROR"
    assert no_set.structured_content == {"code": "NOT_FOUND",
                                         "message": "context set not found"}
    # an unknown tool is no tool error but the protocol error -32602 (MCP's tools section):
    # tests/api/agent_mcp/test_mcp_protocol_errors.py
