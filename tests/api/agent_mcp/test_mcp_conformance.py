"""``/mcp`` against its contract, as a demanding agent developer checks it: the tools' output
schemas as an agent's MCP client checks each result (every real result passes the listed schema,
and the listed schema refuses what the contract's own schema refuses: the rules an answer's
Struct states beside a reference, an untrusted item's validity and flags, what each missing entry
names, the ids of the budget's omissions, a checked item's current hash); the input schemas and
the routes deciding alike at the edges of each rule; protocol versions old and unknown, session
ids that are no key to anything, a posted cancellation. One service and one seeded workspace for
the module: its tests only read the workspace (a pack or replay they release is their own)."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import jsonschema
import msgspec
import pytest
from litestar import Litestar

from context_service.contract import tools as catalogue
from tests.api.agent.packs_corpus import FACTS, pack_body
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import Workspace, connected, http, structured
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
Validator = jsonschema.Draft202012Validator


def _contract_validator(answer: Any) -> Any:
    """The contract's own schema of ``answer``: msgspec's, its references kept (a reference's
    sibling keywords apply beside it, as JSON Schema 2020-12 and OpenAPI 3.1 read them)."""
    return Validator(msgspec.json.schema(answer), format_checker=Validator.FORMAT_CHECKER)


def _untrusted_item_without_validity(pack: dict[str, Any]) -> None:
    item = next(i for i in pack["items"] if i["trust"] == "untrusted")
    del item["validity"]


def _approved_evidence(pack: dict[str, Any]) -> None:
    item = next(i for i in pack["items"] if i["trust"] == "untrusted")
    item["trust"] = "approved"  # evidence is never approved (§7.11)


def _budget_omission_without_ids(pack: dict[str, Any]) -> None:
    del pack["omitted"]["budget"]["ids"]


def _missing_collection_unnamed(pack: dict[str, Any]) -> None:
    pack["missing"].append({"kind": "collection", "reason": "index_unavailable"})


def _unavailable_item_with_a_hash(check: dict[str, Any]) -> None:
    item = check["items"][0]
    item["status"] = "unavailable"  # its current hash is then not there (§8.1)


def _changed_item_without_a_hash(check: dict[str, Any]) -> None:
    item = check["items"][0]
    item["status"] = "changed"
    del item["currentHash"]


BROKEN: dict[str, list[Callable[[dict[str, Any]], None]]] = {
    "context_pack": [_untrusted_item_without_validity, _approved_evidence,
                     _budget_omission_without_ids, _missing_collection_unnamed],
    "replay_pack": [_unavailable_item_with_a_hash, _changed_item_without_a_hash],
}


def _results(workspace: Workspace, mcp_app: Litestar) -> tuple[dict[str, Any], dict[str, Any]]:
    """The listed output schemas, and a real result of the pack and replay tools."""

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with mcp_app.lifespan(), connected(mcp_app, workspace.runner) as client:
            schemas = {t.name: t.output_schema for t in (await client.list_tools()).tools}
            pack = structured(await client.call_tool("context_pack", pack_body(
                filters={"documentIds": [FACTS + "/gone.md", FACTS + "/press/2021-03-cfo.md",
                                         FACTS + "/press/2024-06-cfo.md"]})))
            check = structured(await client.call_tool("replay_pack", {
                "replayId": pack["replayId"], "mode": "verify"}))
            return schemas, {"context_pack": pack, "replay_pack": check}

    return asyncio.run(run())


def test_a_listed_output_schema_refuses_what_the_contract_refuses(
        workspace: Workspace, mcp_app: Litestar) -> None:
    schemas, results = _results(workspace, mcp_app)
    for name, result in results.items():
        listed = Validator(schemas[name], format_checker=Validator.FORMAT_CHECKER)
        contract = _contract_validator(catalogue.BY_NAME[name].answer)
        assert list(listed.iter_errors(result)) == [], name  # the real result passes both
        assert list(contract.iter_errors(result)) == [], name
        assert result["items"], name
        for broken in BROKEN[name]:
            answer = copy.deepcopy(result)
            broken(answer)
            assert not contract.is_valid(answer), broken.__name__  # the contract says so
            assert not listed.is_valid(answer), broken.__name__  # and so must the listing


HANDSHAKE = {"Accept": "application/json, text/event-stream",
             "Content-Type": "application/json"}


def _initialize(version: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "agent", "version": "1"}}}).encode()


def _message(method: str, params: dict[str, Any] | None = None,
             request_id: int | None = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if request_id is not None:
        message["id"] = request_id
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def test_versions_sessions_and_cancellation_as_the_protocol_says(
        workspace: Workspace, mcp_app: Litestar) -> None:
    """An old version is answered in it, an unknown one with the newest the handshake offers;
    no session is ever issued, so a session id sent (made up, or seen by another credential) is
    no key to anything: the answer is the presenting credential's; a posted cancellation is
    acknowledged and the endpoint goes on answering."""
    reader = {**HANDSHAKE, "Authorization": f"Bearer {workspace.reader}"}
    listing = {**reader, "MCP-Protocol-Version": "2025-11-25"}

    async def run() -> list[Any]:
        async with mcp_app.lifespan(), http(mcp_app) as client:
            return [await client.post("/mcp", content=body, headers=headers) for body, headers in (
                (_initialize("2024-11-05"), reader),
                (_initialize("1999-01-01"), reader),
                (_message("tools/list"), {**listing, "Mcp-Session-Id": "another-agents"}),
                (_message("notifications/cancelled", {"requestId": 1}, None), listing),
                (_message("tools/call", {"name": "list_context_sets", "arguments": {}}),
                 listing))]

    old, unknown, listed, cancelled, called = asyncio.run(run())
    assert old.json()["result"]["protocolVersion"] == "2024-11-05"
    assert unknown.json()["result"]["protocolVersion"] == "2025-11-25"
    assert all("mcp-session-id" not in r.headers for r in (old, unknown, listed, called))
    names = [t["name"] for t in listed.json()["result"]["tools"]]
    assert "context_pack" in names and "run_query_template" not in names  # the reader's
    assert cancelled.status_code == 202
    assert called.json()["result"]["isError"] is False


# (tool, arguments): values at the edges of each rule; the route's decision and the listed
# input schema's must be the same (the schema is what an agent's framework checks first)
EDGES: list[tuple[str, dict[str, Any]]] = [
    ("lookup_definitions", {"term": "CFO\u0000"}),  # no rule of §9.1 refuses it
    ("lookup_definitions", {"term": " CFO "}),
    ("lookup_definitions", {"term": "\u2028\u3000"}),  # blank: white space to Python
    ("lookup_definitions", {"term": "\u200b"}),  # not white space: not blank
    ("lookup_definitions", {"term": "x" * 201}),
    ("lookup_definitions", {"term": "\U0001f600" * 200}),  # 200 code points
    ("lookup_definitions", {"term": "CFO", "limit": 0}),
    ("lookup_definitions", {"term": "CFO", "limit": 50}),
    ("match_verified_answers", {"question": "Who is the CFO?\u0000"}),
    ("match_verified_answers", {"question": "\t"}),
    ("match_verified_answers", {"question": "x" * 4001}),
    ("context_pack", {"task": "CFO\u0000"}),
    ("context_pack", {"task": "\u2028"}),
    ("context_pack", {"task": "CFO", "budget": {"maxTokens": 255}}),
    ("list_context_sets", {"query": "x" * 200}),
    ("list_context_sets", {"query": "x" * 201}),
    ("list_context_sets", {"limit": 101}),
    ("query_fields", {"collectionId": FACTS, "aggregate": {"functions": [{"op": "count"}]},
                      "knownAt": "2025-1-01"}),
]
REFUSED = ("VALIDATION_ERROR", "INVALID_REQUEST")


def test_the_input_schema_and_the_route_agree_at_the_edges(workspace: Workspace) -> None:
    agent = workspace.api.as_(None)
    disagreements = []
    for name, arguments in EDGES:
        tool = catalogue.BY_NAME[name]
        resp = agent.post(tool.path, arguments,
                          headers={"Authorization": f"Bearer {workspace.runner}"})
        assert resp.status_code < 500, resp.text
        accepted = not (resp.status_code == 400 and resp.json()["code"] in REFUSED)
        if Validator(tool.input_schema()).is_valid(arguments) != accepted:
            disagreements.append((name, arguments, resp.status_code))
    assert disagreements == []
