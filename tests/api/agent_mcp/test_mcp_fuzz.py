"""The MCP tools fuzzed with the SDK's own client: calls drawn by hypothesis from the tools'
input schemas (values of the declared types, bounds and enums, and values of any JSON type
beside them, unknown tools and keys too) are answered without a 5xx, as a tool result or a
JSON-RPC error, and every tool error carries the agent API's ``code`` and ``message``."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import mcp_types as types
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from litestar import Litestar
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from context_service.contract import tools as catalogue
from context_service.http.agent.ratelimit import RateLimiter
from tests.api.agent_mcp.mcp_support import MCP, Workspace, http

pytestmark = pytest.mark.postgres
CALLS_PER_SESSION = 12
SESSIONS = 4  # hypothesis examples: each one session of CALLS_PER_SESSION calls

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=3),
    max_leaves=8)


def value(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """A value the schema describes, or now and then any JSON value."""
    return st.one_of(_typed(schema, defs), _typed(schema, defs), _typed(schema, defs), JSON)


def _typed(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    if "$ref" in schema:
        return st.deferred(lambda: _object(defs[schema["$ref"].rsplit("/", 1)[1]], defs))
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return st.text(min_size=schema.get("minLength", 0),
                       max_size=min(schema.get("maxLength", 40), 40))
    if kind == "integer":
        return st.integers(schema.get("minimum", -10) - 2, schema.get("maximum", 10**6) + 2)
    if kind == "array":
        return st.lists(value(schema.get("items", {}), defs), max_size=4)
    if kind == "object":
        return _object(schema, defs)
    return JSON


def _object(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    properties = schema.get("properties", {})
    if not properties:
        return st.dictionaries(st.text(max_size=8), JSON, max_size=3)
    required = set(schema.get("required", ()))
    fields = {name: value(prop, defs) for name, prop in properties.items()}
    return st.fixed_dictionaries(
        {name: s for name, s in fields.items() if name in required},
        optional={**{name: s for name, s in fields.items() if name not in required},
                  "unknownKey": JSON})


def call(tool: catalogue.AgentTool) -> st.SearchStrategy[tuple[str, Any]]:
    schema = tool.input_schema()
    return st.tuples(st.just(tool.name), _object(schema, schema.get("$defs", {})))


CALL = st.one_of(*(call(tool) for tool in catalogue.TOOLS),
                 st.tuples(st.text(max_size=12), st.dictionaries(st.text(max_size=8), JSON)))


def test_generated_tool_calls_are_answered(workspace: Workspace, mcp_app: Litestar) -> None:
    mcp_app.state.services.agent.limiter = RateLimiter(rate=1000, burst=1000)
    outcomes: dict[str, int] = {"result": 0, "tool error": 0, "json-rpc error": 0}

    @settings(max_examples=SESSIONS, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.function_scoped_fixture,
                                     HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.lists(CALL, min_size=CALLS_PER_SESSION, max_size=CALLS_PER_SESSION))
    def session(calls: list[tuple[str, Any]]) -> None:
        asyncio.run(_answered(mcp_app, workspace.runner, calls, outcomes))

    session()
    assert outcomes["result"] > 0 and outcomes["tool error"] > 0, outcomes


async def _answered(app: Litestar, bearer: str, calls: list[tuple[str, Any]],
                    outcomes: dict[str, int]) -> None:
    statuses: list[int] = []

    async def seen(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    async with app.lifespan(), http(app, {"Authorization": f"Bearer {bearer}"}) as transport:
        transport.event_hooks = {"response": [seen]}
        async with Client(streamable_http_client(MCP, http_client=transport)) as client:
            for name, arguments in calls:
                try:
                    result = await client.call_tool(name, arguments)
                except MCPError as exc:  # a JSON-RPC error: the SDK read its code and message
                    assert isinstance(exc.error.code, int) and exc.error.message, exc
                    outcomes["json-rpc error"] += 1
                    continue
                if result.is_error:
                    error = result.structured_content
                    assert isinstance(error, dict) and set(error) >= {"code", "message"}, result
                    assert error["code"] != "INTERNAL_ERROR", (name, arguments, error)
                    text = result.content[0]
                    assert isinstance(text, types.TextContent)
                    assert text.text.startswith(f"{error['code']}: ")
                    outcomes["tool error"] += 1
                else:
                    assert isinstance(result.structured_content, dict), result
                    outcomes["result"] += 1
    assert all(status < 500 for status in statuses), statuses

