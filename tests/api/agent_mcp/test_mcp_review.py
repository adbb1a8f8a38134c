"""``/mcp`` as agent platforms meet it: request ids of every JSON type on both transports (a
request is answered, never taken for a notification), what is answered is never stored by a
cache (the credential's own, as every ``/api/`` answer), a token only in its header, a
credential of another workspace, a credential revoked between two calls, and many calls at once
from one credential, one of them slow to send its body."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
from litestar import Litestar

from context_service.http.agent import late_body
from context_service.http.limits import MAX_BODY
from tests.api.agent.packs_corpus import pack_body
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent_mcp.mcp_support import (
    JSON_ONLY,
    Workspace,
    connected,
    http,
    structured,
)
from tests.api.agent_mcp.mcp_support import module_mcp_app as module_mcp_app  # the fixture
from tests.api.agent_mcp.mcp_support import module_workspace as module_workspace  # the fixture
from tests.api.conftest import Api
from tests.api.namespaced import namespaced
from tests.api.sets_namespaced import seed_workspace
from tests.api.sets_namespaced import token as token_of
from tests.api.sets_support import CREDENTIALS, token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
MODERN = "2026-07-28"  # the per-request protocol (the SDK's second transport)
META = {types.PROTOCOL_VERSION_META_KEY: MODERN, types.CLIENT_CAPABILITIES_META_KEY: {}}
LEGACY = {**JSON_ONLY, "MCP-Protocol-Version": "2025-06-18"}
INVALID_REQUEST = -32600


def _listing(request_id: str, modern: bool = False) -> tuple[bytes, dict[str, str]]:
    """A ``tools/list`` whose id is the JSON text ``request_id``, on either transport."""
    if not modern:
        return (f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/list"}}'.encode(), LEGACY)
    body = (f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/list",'
            f'"params":{{"_meta":{json.dumps(META)}}}}}')
    return body.encode(), {**JSON_ONLY, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}


def _call(name: str, arguments: dict[str, Any], request_id: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}).encode()


def _post(app: Litestar, bearer: str | None, posts: list[tuple[bytes, dict[str, str]]],
          path: str = "/mcp") -> list[Any]:
    async def run() -> list[Any]:
        headers = {} if bearer is None else {"Authorization": f"Bearer {bearer}"}
        async with app.lifespan(), http(app, headers) as client:
            return [await asyncio.wait_for(client.post(path, content=body, headers=sent), 30)
                    for body, sent in posts]
    return asyncio.run(run())


# ids MCP does not allow (a string or an integer, never null): JSON-RPC answers an invalid
# request with an error whose id is null; the 2025 transport took each of these for a
# notification (202, no body), so the client waited for an answer that never came
NOT_AN_ID = ["null", "1.5", "true", '{"a":1}', "[1]", "1e400"]


@pytest.mark.parametrize("request_id", NOT_AN_ID)
def test_a_request_with_an_id_mcp_does_not_allow_is_answered(
        workspace: Workspace, mcp_app: Litestar, request_id: str) -> None:
    legacy, modern = _post(mcp_app, workspace.reader, [_listing(request_id),
                                                        _listing(request_id, modern=True)])
    for answer in (legacy, modern):
        assert answer.status_code == 400, answer.text
        error = answer.json()
        assert error["id"] is None and error["error"]["code"] == INVALID_REQUEST, error


def test_ids_of_either_allowed_type_are_echoed_and_notifications_accepted(
        workspace: Workspace, mcp_app: Litestar) -> None:
    """Strings (the empty one too) and integers of any size come back as sent; a notification
    and a posted response are accepted without an answer, as the protocol has them."""
    ids = ['""', '"abc"', "0", "-1", str(2**70)]
    posts = [_listing(i) for i in ids] + [_listing(i, modern=True) for i in ids]
    posts += [(b'{"jsonrpc":"2.0","method":"notifications/initialized"}', LEGACY),
              (b'{"jsonrpc":"2.0","id":1,"result":{}}', LEGACY)]
    answers = _post(mcp_app, workspace.reader, posts)
    for request_id, answer in zip(ids + ids, answers[:-2], strict=True):
        assert answer.status_code == 200, answer.text
        assert answer.json()["id"] == json.loads(request_id)
        assert "context_pack" in [t["name"] for t in answer.json()["result"]["tools"]]
    assert [a.status_code for a in answers[-2:]] == [202, 202]


def test_nothing_mcp_answers_may_be_stored_by_a_cache(workspace: Workspace,
                                                      mcp_app: Litestar) -> None:
    """A tool's result is the credential's own, as the agent route's answer (``no-store``,
    like every ``/api/`` answer): so are a listing, a refusal of the method or of a body too
    large, and a request with an id not allowed."""
    async def run() -> list[Any]:
        auth = {"Authorization": f"Bearer {workspace.reader}"}
        async with mcp_app.lifespan(), http(mcp_app, auth) as client:
            return [
                await client.post("/mcp", content=_call("list_context_sets", {}),
                                  headers=LEGACY),
                await client.post("/mcp", content=_listing("7")[0], headers=LEGACY),
                await client.post("/mcp", content=_listing("7", modern=True)[0],
                                  headers=_listing("7", modern=True)[1]),
                await client.get("/mcp", headers={"Accept": "text/event-stream"}),
                await client.post("/mcp", content=b" " * (MAX_BODY + 1), headers=LEGACY),
                await client.post("/mcp", content=_listing("null")[0], headers=LEGACY),
            ]

    called, *others = asyncio.run(run())
    assert called.status_code == 200 and "finance" in called.text
    assert [a.status_code for a in others] == [200, 200, 405, 400, 400]
    for answer in (called, *others):
        assert answer.headers.get("Cache-Control") == "no-store", (answer.status_code,
                                                                    answer.headers)


def test_a_token_counts_only_in_its_header_in_any_letter_case(workspace: Workspace,
                                                              mcp_app: Litestar) -> None:
    """The metadata says ``bearer_methods_supported: ["header"]``: a token in the query string
    is no credential (the request is refused as presenting none); the scheme is read in any
    letter case (RFC 9110 §11.1)."""
    body = _call("lookup_definitions", {"term": "CFO"})
    in_query = _post(mcp_app, None, [(body, LEGACY)],
                     path=f"/mcp?access_token={workspace.reader}")[0]
    assert in_query.status_code == 401
    assert in_query.json() == {"code": "UNAUTHORIZED", "message": "agent credential is required"}
    for scheme in ("bearer", "BEARER", "bEaReR"):
        answer = _post(mcp_app, None, [(body, {**LEGACY, "Authorization":
                                               f"{scheme} {workspace.reader}"})])[0]
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["isError"] is False


def test_a_credential_of_another_workspace_sees_none_of_it(
        workspace: Workspace, mcp_app: Litestar, module_api: Api) -> None:
    other = namespaced(module_api, "acme")
    seed_workspace(other)
    stranger = token_of(other)

    async def run() -> tuple[Any, list[Any]]:
        async with mcp_app.lifespan(), connected(mcp_app, workspace.reader) as client:
            pack = structured(await client.call_tool("context_pack", pack_body()))
        async with mcp_app.lifespan(), connected(mcp_app, stranger) as client:
            return pack, [
                await client.call_tool("list_context_sets", {}),
                await client.call_tool("get_context_set", {"contextSetId": "finance"}),
                await client.call_tool("list_fields", {"collectionId": "company-facts"}),
                await client.call_tool("replay_pack", {"replayId": pack["replayId"],
                                                       "mode": "verify"})]

    pack, (sets, finance, fields, replay) = asyncio.run(run())
    assert pack["items"], pack  # acme has something to keep
    assert structured(sets) == {"items": []}
    assert finance.structured_content == {"code": "NOT_FOUND",
                                          "message": "context set not found"}
    assert fields.is_error and fields.structured_content["code"] == "NOT_FOUND"
    assert replay.structured_content == {"code": "NOT_FOUND", "message": "replay not found"}


def test_a_credential_revoked_between_two_calls_is_refused_the_second(
        workspace: Workspace, mcp_app: Litestar) -> None:
    revoked = token(workspace.api)
    body = _call("list_context_sets", {})

    async def run() -> list[Any]:
        auth = {"Authorization": f"Bearer {revoked}"}
        async with mcp_app.lifespan(), http(mcp_app, auth) as client:
            first = await client.post("/mcp", content=body, headers=LEGACY)
            assert workspace.api.as_("user:alice").delete(
                f"{CREDENTIALS}/{revoked.split('_')[1]}").status_code == 204
            return [first, await client.post("/mcp", content=body, headers=LEGACY)]

    first, second = asyncio.run(run())
    assert first.status_code == 200 and "finance" in first.text
    assert second.status_code == 401
    assert second.json() == {"code": "UNAUTHORIZED", "message": "agent credential is not valid"}


def test_many_calls_at_once_each_get_their_own_answer_past_a_slow_one(
        workspace: Workspace, mcp_app: Litestar, monkeypatch: pytest.MonkeyPatch) -> None:
    """One credential, 40 calls at once, every one with the same id (the endpoint keeps no
    session, so ids need not be unique across requests), while another request of the same
    credential has sent half its body: every call is answered about its own collection, and
    the slow one once its body is complete."""
    # the slow body waits for the 40 calls, however long a loaded machine takes over them
    monkeypatch.setattr(late_body, "BODY_WAIT_SECONDS", 300.0)
    names = [f"nowhere-{n}" for n in range(40)]
    slow_body = _call("lookup_definitions", {"term": "slow"}, request_id=99)
    release = asyncio.Event()

    async def slowly() -> AsyncIterator[bytes]:
        yield slow_body[:20]
        await release.wait()
        yield slow_body[20:]

    async def run() -> tuple[list[Any], Any]:
        auth = {"Authorization": f"Bearer {workspace.reader}"}
        async with mcp_app.lifespan(), http(mcp_app, auth) as client:
            slow = asyncio.create_task(client.post("/mcp", content=slowly(), headers=LEGACY))
            answers = await asyncio.wait_for(asyncio.gather(*[
                client.post("/mcp", content=_call("list_fields", {"collectionId": name}),
                            headers=LEGACY) for name in names]), 60)
            assert not slow.done()
            release.set()
            return answers, await asyncio.wait_for(slow, 30)

    answers, slow = asyncio.run(run())
    for name, answer in zip(names, answers, strict=True):
        assert answer.status_code == 200, answer.text
        assert answer.json()["id"] == 1
        assert answer.json()["result"]["structuredContent"] == {
            "code": "NOT_FOUND", "message": f'collection "{name}" not found'}
    assert slow.status_code == 200 and slow.json()["id"] == 99
