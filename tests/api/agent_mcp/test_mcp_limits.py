"""One body limit for an MCP call, the one on the bytes the caller sent: a tool call's arguments
are sent on to the route re-encoded, and the route's body is never longer than the arguments the
caller wrote, so the route never refuses as too large what ``/mcp`` admitted, and no body within
the limit can grow into a larger one on the way in."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import mcp_types as types
import pydantic_core
import pytest
from hypothesis import given
from hypothesis import strategies as st
from litestar import Litestar

from context_service.http.agent import late_body
from context_service.http.limits import MAX_BODY
from context_service.http.mcp import dispatch
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import JSON_ONLY, Workspace, http
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture

MODERN = "2026-07-28"
LEGACY = {**JSON_ONLY, "MCP-Protocol-Version": "2025-06-18"}
LOOKUP = "/api/agent/v1/definitions/lookup"


def _call(name: str, arguments_json: str, modern: bool) -> tuple[bytes, dict[str, str]]:
    """A ``tools/call`` of either transport, its arguments given as raw JSON text."""
    params = f'"name":{json.dumps(name)},"arguments":{arguments_json}'
    if not modern:
        return (f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{params}}}}}'
                .encode(), LEGACY)
    meta = {types.PROTOCOL_VERSION_META_KEY: MODERN, types.CLIENT_CAPABILITIES_META_KEY: {}}
    body = (f'{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{params},'
            f'"_meta":{json.dumps(meta)}}}}}')
    return body.encode(), {**JSON_ONLY, "MCP-Protocol-Version": MODERN,
                           "Mcp-Method": "tools/call", "Mcp-Name": name}


def _post(app: Litestar, bearer: str, posts: list[tuple[str, bytes, dict[str, str]]]) -> list[Any]:
    async def run() -> list[Any]:
        async with app.lifespan(), http(app, {"Authorization": f"Bearer {bearer}"}) as client:
            return [await asyncio.wait_for(client.post(path, content=body, headers=headers), 60)
                    for path, body, headers in posts]
    return asyncio.run(run())


def _padded(room: int) -> str:
    """Arguments of ``lookup_definitions`` with an unknown key holding ``1e15`` as often as fits
    in ``room`` bytes: msgspec writes each one ``1000000000000000.0``, 4.5 times as long."""
    head, tail = '{"term":"CFO","padding":[1e15', "]}"
    count = (room - len(head) - len(tail)) // len(",1e15")
    text = head + ",1e15" * count + tail
    return text + " " * (room - len(text))  # exactly ``room`` bytes


@pytest.mark.postgres
@pytest.mark.shared_service
@pytest.mark.parametrize("modern", [True, False], ids=["2026-07-28", "2025-06-18"])
def test_a_call_within_the_limit_is_answered_as_its_body_over_http(
        workspace: Workspace, mcp_app: Litestar, modern: bool) -> None:
    """A call whose body is within the limit reaches the route, which answers it as it answers
    the same arguments posted over HTTP: it was refused as ``request body too large`` once its
    numbers had been written out longer, naming a limit the caller never exceeded."""
    envelope = len(_call("lookup_definitions", "", modern)[0])
    arguments = _padded(MAX_BODY - envelope)
    body, headers = _call("lookup_definitions", arguments, modern)
    assert len(body) == MAX_BODY
    over_http, over_mcp, past = _post(mcp_app, workspace.reader, [
        (LOOKUP, arguments.encode(), {"Content-Type": "application/json"}),
        ("/mcp", body, headers),
        ("/mcp", _call("lookup_definitions", arguments + " ", modern)[0], headers)])
    # the one limit is the caller's bytes: one byte more is refused at /mcp, as documented
    assert past.status_code == 400, past.text[:300]
    assert past.json()["error"] == {
        "code": -32600, "message": f"request body too large (more than {MAX_BODY} bytes)"}
    assert over_http.status_code == 400, over_http.text[:300]
    assert over_http.json()["message"] == 'unknown field "padding" at $'
    assert over_mcp.status_code == 200, over_mcp.text[:300]
    result = over_mcp.json()["result"]
    assert result["isError"] is True
    assert result["structuredContent"] == over_http.json()


# JSON numbers written every way JSON allows: digits, a point, an exponent with its sign
_DIGITS = st.text("0123456789", min_size=1, max_size=20)
_MANTISSA = st.tuples(_DIGITS.map(lambda d: d.lstrip("0") or "0"),
                      st.text("0123456789", max_size=20))
_NUMBER = st.builds(
    lambda sign, mantissa, mark, exponent_sign, exponent: (
        sign + mantissa[0] + (f".{mantissa[1]}" if mantissa[1] else "")
        + (f"{mark}{exponent_sign}{exponent}" if mark else "")),
    st.sampled_from(["", "-"]), _MANTISSA, st.sampled_from(["", "e", "E"]),
    st.sampled_from(["", "+", "-"]), st.integers(0, 330).map(str))
_STRING = st.text(max_size=12).map(lambda text: json.dumps(text, ensure_ascii=True)) | st.text(
    max_size=12).map(lambda text: json.dumps(text, ensure_ascii=False))
_VALUE = st.recursive(
    _NUMBER | _STRING | st.sampled_from(["true", "false", "null"]),
    lambda inner: st.lists(inner, max_size=4).map(lambda items: " [ " + " , ".join(items) + " ] ")
    | st.lists(st.tuples(_STRING, inner), max_size=4).map(
        lambda pairs: "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"),
    max_leaves=12)


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return value - value == 0
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    if isinstance(value, list):
        return all(_finite(item) for item in value)
    return True


@given(st.lists(st.tuples(_STRING, _VALUE), max_size=5).map(
    lambda pairs: "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"))
def test_the_routes_body_is_never_longer_than_the_arguments_sent(text: str) -> None:
    """Whatever way the caller wrote its arguments, as either transport parses them, the body
    sent on to the route is no longer than they were, and is the same JSON (a float stays a
    float, an integer an integer): a body within the limit cannot grow past it on the way."""
    for parsed in (json.loads(text), pydantic_core.from_json(text)):
        if not _finite(parsed):  # refused before any route is called
            continue
        body = dispatch.route_body(parsed)
        assert len(body) <= len(text.encode()), (text, body)
        again = json.loads(body)
        assert again == parsed
        assert json.dumps(again) == json.dumps(parsed)  # 1.0 stays 1.0, 1 stays 1


@pytest.mark.parametrize(("sent", "written"), [
    ("1e9", b"1e9"), ("1E+15", b"1e15"), ("1.5e10", b"15e9"), ("0.001", b"1e-3"),
    ("1e-3", b"1e-3"), ("100.0", b"1e2"), ("-0.0", b"-0.0"), ("0.1e1", b"1.0"),
    ("123456789012345678901234567890", b"123456789012345678901234567890"),
    ('"\\u00e9\\ud83d\\ude00\\/"', '"\u00e9\U0001f600/"'.encode()),
])
def test_numbers_and_strings_are_written_as_short_as_json_allows(sent: str,
                                                                 written: bytes) -> None:
    assert dispatch.route_body({"v": json.loads(sent)}) == b'{"v":' + written + b"}"


def _legacy(version: str | None) -> dict[str, str]:
    return JSON_ONLY if version is None else {**JSON_ONLY, "MCP-Protocol-Version": version}


LIST = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
PING = '{"jsonrpc":"2.0","id":"two","method":"ping"}'
NOTICE = '{"jsonrpc":"2.0","method":"notifications/initialized"}'


@pytest.mark.postgres
@pytest.mark.shared_service
@pytest.mark.parametrize("version", ["2025-03-26", None], ids=["2025-03-26", "no-version"])
def test_a_batch_is_answered_where_the_protocol_has_batches(
        workspace: Workspace, mcp_app: Litestar, version: str | None) -> None:
    """Protocol 2025-03-26 (also what a request naming no version speaks) has JSON-RPC batches,
    which a server must accept: each request of one is answered, in one JSON array, a
    notification is not; a batch of notifications only is accepted (202, no body). It was
    refused as invalid params with the SDK's validation dump."""
    call = ('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_fields",'
            '"arguments":{"collectionId":"nowhere"}}}')
    answered, accepted = _post(mcp_app, workspace.reader, [
        ("/mcp", f"[{LIST}, {NOTICE}, {PING}, {call}]".encode(), _legacy(version)),
        ("/mcp", f"[{NOTICE}]".encode(), _legacy(version))])
    assert answered.status_code == 200, answered.text[:500]
    assert answered.headers["content-type"] == "application/json"
    by_id = {answer["id"]: answer for answer in answered.json()}
    assert sorted(by_id, key=str) == [1, 3, "two"]
    assert "context_pack" in [tool["name"] for tool in by_id[1]["result"]["tools"]]
    assert by_id["two"]["result"] == {}
    assert by_id[3]["result"]["structuredContent"] == {
        "code": "NOT_FOUND", "message": 'collection "nowhere" not found'}
    assert accepted.status_code == 202 and accepted.content == b""


@pytest.mark.postgres
@pytest.mark.shared_service
@pytest.mark.parametrize(("version", "body", "message"), [
    ("2025-06-18", f"[{LIST}]", "batches"),  # gone since 2025-06-18
    ("2025-11-25", f"[{LIST}]", "batches"),
    ("2025-03-26", "[]", "empty batch"),
    ("2025-03-26", "[" + ",".join([PING] * 21) + "]", "at most 20"),
    ("2025-06-18", "{}", "JSON-RPC message"),
    ("2025-06-18", '"tools/list"', "JSON-RPC message"),
    ("2025-06-18", '{"jsonrpc":"1.0","id":2,"method":"tools/list"}', "JSON-RPC message"),
    ("2025-03-26", "[{}]", "JSON-RPC message"),
])
def test_a_body_that_is_no_message_is_an_invalid_request_said_plainly(
        workspace: Workspace, mcp_app: Litestar, version: str, body: str, message: str) -> None:
    """A batch where the protocol has none, an empty or too long batch, a body that is no
    JSON-RPC message: JSON-RPC's invalid request (-32600, id null), in a sentence. The 2025
    transport answered invalid params (-32602) with the validation library's dump, a kilobyte
    echoing the body and naming the library and its version."""
    answer = _post(mcp_app, workspace.reader, [("/mcp", body.encode(), _legacy(version))])[0]
    assert answer.status_code in (200, 400), answer.text
    # a batch is answered with its one member's error
    answer_body = answer.json()[0] if answer.status_code == 200 else answer.json()
    assert answer_body["id"] is None
    assert answer_body["error"]["code"] == -32600, answer_body
    text = answer_body["error"]["message"]
    assert message in text and "pydantic" not in text and len(text) < 200, text


@pytest.mark.postgres
@pytest.mark.shared_service
def test_a_body_sent_too_slowly_is_refused_as_over_http(
        workspace: Workspace, mcp_app: Litestar, monkeypatch: pytest.MonkeyPatch) -> None:
    """An admitted request whose body does not arrive within the agent API's body wait is
    refused as the agent routes refuse it (400, connection closed), instead of holding the
    request open for as long as the client likes."""
    monkeypatch.setattr(late_body, "BODY_WAIT_SECONDS", 0.2)
    never = asyncio.Event()

    async def stalled() -> Any:
        yield LIST.encode()[:10]
        await never.wait()

    async def run() -> Any:
        auth = {"Authorization": f"Bearer {workspace.reader}"}
        async with mcp_app.lifespan(), http(mcp_app, auth) as client:
            try:
                return await asyncio.wait_for(
                    client.post("/mcp", content=stalled(), headers=_legacy("2025-06-18")), 30)
            finally:
                never.set()

    answer = asyncio.run(run())
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"] == {
        "code": -32600, "message": "request body did not arrive within 0.2 seconds"}
    assert answer.headers["connection"] == "close"


@pytest.mark.postgres
@pytest.mark.shared_service
@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
def test_a_batch_nested_too_deep_is_a_parse_error(workspace: Workspace, mcp_app: Litestar,
                                                  version: str) -> None:
    """A body of arrays nested deeper than the parsers go is JSON-RPC's parse error (400), as
    the transport says of any such body: never a recursion error as a 500."""
    body = b"[" * 200_000 + b"]" * 200_000
    answer = _post(mcp_app, workspace.reader, [("/mcp", body, _legacy(version))])[0]
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["error"]["code"] == -32700, answer.text[:300]
