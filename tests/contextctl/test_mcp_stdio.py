"""``contextctl mcp`` launched by the SDK's stdio client against a served process: the tools
the service lists for the credential (per scope, per bound set), every kind of call answered
through the agent routes, a pack identical to the HTTP one, errors as tool errors, and no
start without ``CS_AGENT_TOKEN``."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import subprocess
import sys
from typing import Any

import httpx
import msgspec
import pytest
from mcp import Client, StdioServerParameters

from tests.api.agent.packs_corpus import FACTS, TASK, pack_body, seed_corpus
from tests.api.conftest import Api
from tests.api.sets_support import create_set, token
from tests.e2e.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.postgres]
COMMAND = (sys.executable, "-m", "context_service.contextctl", "mcp")


@pytest.fixture(scope="module")
def seeded(service: ServerProcess) -> dict[str, str]:
    with httpx.Client(base_url=service.url, timeout=30) as http:
        api = Api(http)  # type: ignore[arg-type]  # the same helpers, over a socket
        seed_corpus(api)
        create_set(api, "finance", collections=[FACTS],
                   definitions=[{"term": "CFO", "definition": "Chief financial officer."}])
        return {"reader": token(api), "runner": token(api, ("context:read", "queries:run")),
                "bound": token(api, context_set_id="finance")}


def _env(service: ServerProcess, bearer: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    env["CS_URL"] = service.url
    if bearer is not None:
        env["CS_AGENT_TOKEN"] = bearer
    return env


def _session(service: ServerProcess, bearer: str) -> Client:
    return Client(StdioServerParameters(command=COMMAND[0], args=list(COMMAND[1:]),
                                        env=_env(service, bearer)))


def test_tools_are_the_services_for_the_credential(service: ServerProcess,
                                                   seeded: dict[str, str]) -> None:
    async def listing(bearer: str) -> tuple[dict[str, str], str | None]:
        async with _session(service, bearer) as client:
            tools = (await client.list_tools()).tools
            versions.append(client.server_info.version if client.server_info else "")
            return {t.name: t.description or "" for t in tools}, client.instructions

    versions: list[str] = []
    reader, instructions = asyncio.run(listing(seeded["reader"]))
    assert versions == [importlib.metadata.version("context-service")]  # the installed one
    assert "run_query_template" not in reader and "context_pack" in reader
    assert instructions is not None and "untrusted" in instructions
    assert "run_query_template" in asyncio.run(listing(seeded["runner"]))[0]
    bound = asyncio.run(listing(seeded["bound"]))[0]
    assert "bound to context set 'finance'" in bound["context_pack"]


def test_calls_go_through_the_agent_routes(service: ServerProcess,
                                           seeded: dict[str, str]) -> None:
    async def calls() -> list[Any]:
        async with _session(service, seeded["reader"]) as client:
            pack = await client.call_tool("context_pack", pack_body())
            replay_id = pack.structured_content["replayId"]
            return [pack,
                    await client.call_tool("replay_pack", {"replayId": replay_id,
                                                           "mode": "recompute", "task": TASK}),
                    await client.call_tool("lookup_definitions", {"term": "cfo"}),
                    await client.call_tool("context_pack", {"task": " "}),
                    await client.call_tool("run_query_template", {"templateId": "x"})]

    pack, recomputed, defined, invalid, forbidden = asyncio.run(calls())
    assert not pack.is_error and not recomputed.is_error and not defined.is_error
    with httpx.Client(base_url=service.url, timeout=30) as http:
        resp = http.post("/api/agent/v1/context-packs", json=pack_body(),
                         headers={"Authorization": f"Bearer {seeded['reader']}"})
    assert msgspec.json.encode(pack.structured_content) == resp.content
    assert pack.content[0].text.startswith("Context pack pk_")
    assert recomputed.structured_content["pack"]["packId"] == resp.json()["packId"]
    assert defined.structured_content["items"][0]["term"] == "CFO"
    assert invalid.is_error and invalid.structured_content == {
        "code": "VALIDATION_ERROR", "message": "request validation failed",
        "details": [{"path": "$.task", "message": "must not be blank"}]}
    assert forbidden.is_error and forbidden.structured_content["code"] == "FORBIDDEN"


def test_it_needs_an_agent_credential(service: ServerProcess) -> None:
    done = subprocess.run(COMMAND, env=_env(service, None), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 2 and "CS_AGENT_TOKEN is required" in done.stderr
