"""The shared HTTP plumbing against bodies and moments a hostile or unlucky caller produces:
numbers beyond a double where the contract takes any JSON number, nesting deeper than the decoder
goes, and a request that arrives while the service is shutting down. Each API test runs in a
workspace of its own on the module's one service."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import msgspec
import pytest

from context_service.contract.agent import QueryFieldsRequest
from context_service.contract.query import PublishQueryIndexRequest
from context_service.domain.errors import RequestInvalidError
from context_service.http import body as v1_body
from context_service.http.agent import body as agent_body
from context_service.http.agent.errors import ApiError
from context_service.http.shutdown import Drain
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.agent.templates_namespaced import approve, registered, runner, seeded
from tests.api.agent.templates_support import RUN
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import add_member

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
DEEP = 100_000  # far deeper than any decoder recurses


def nested(depth: int, inner: bytes = b"1") -> bytes:
    return b"[" * depth + inner + b"]" * depth


@pytest.fixture
def corpus(api: Api) -> Namespaced:
    """A workspace with the pack corpus and a template binding one ``number`` and one
    ``integer`` parameter, approved by the set ``finance``."""
    own = seeded(namespaced(api, "acme"))
    registered(own, "number", "SELECT :x AS x, :n AS n",
               [{"name": "x", "type": "number"}, {"name": "n", "type": "integer"}])
    approve(own, ["number"])
    return own


def run_raw(corpus: Namespaced, parameters: bytes) -> Any:
    raw = b'{"templateId":"number","contextSetId":"finance","parameters":' + parameters + b"}"
    return runner(corpus).post(RUN, raw=raw)


# --- numbers beyond a double --------------------------------------------------------------------

def test_a_number_beyond_a_double_is_bound_from_its_decimal_text(corpus: Namespaced) -> None:
    """Spec 11.4: a ``number`` parameter is any JSON number, bound as ``numeric`` from its
    decimal text; 1e400 is a JSON number (a double cannot hold it, numeric can)."""
    for sent, shown in ((b"1e400", "1" + "0" * 400), (b"-1E+400", "-1" + "0" * 400)):
        resp = run_raw(corpus, b'{"x":' + sent + b"}")
        assert resp.status_code == 200, resp.text
        assert resp.json()["rows"] == [[shown, None]], sent


def test_a_number_beyond_a_double_is_a_field_rule_where_a_double_is_asked_for(
        corpus: Namespaced) -> None:
    """It decodes (rule 5 of 1.4 holds: it is a JSON number); the parameter's form is then a
    field rule, answered ``VALIDATION_ERROR`` at its path."""
    resp = run_raw(corpus, b'{"n":1e400}')
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"code": "VALIDATION_ERROR", "message": "request validation failed",
                           "details": [{"path": "$.parameters.n", "message": "must be an integer"}]}


def test_a_filter_value_beyond_a_double_is_not_a_number_value() -> None:
    """A studied ``number`` is a finite double (5.1): a filter value of 1e400 decodes, and is
    not a number value for the plan rules (never an infinity that would compare)."""
    found = agent_body.decode(
        b'{"collectionId":"c","fields":["x"],"filters":[{"field":"x","op":"gt","value":1e400},'
        b'{"field":"x","op":"lt","value":0.5}]}', QueryFieldsRequest)
    assert found.filters is not None
    huge, small = (f.value for f in found.filters)
    assert not isinstance(huge, float | int)  # not an infinity, not a number value
    assert small == 0.5 and isinstance(small, float)  # a double stays a double


# --- nesting --------------------------------------------------------------------------------------

def test_deep_nesting_in_an_agent_body_is_an_invalid_request(corpus: Namespaced) -> None:
    resp = run_raw(corpus, b'{"x":' + nested(DEEP) + b"}")
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["code"] == "INVALID_REQUEST" and "nest" in body["message"], body


def test_deep_nesting_in_a_v1_body_is_an_invalid_request(api: Api) -> None:
    own = namespaced(api, "acme")
    add_member(own, "user:alice", "owner", ws=own.ns)
    path = f"/v1/namespaces/{own.ns}/query-templates"
    raw = (b'{"id":"t","description":"d","sql":"SELECT :x AS x","parameters":'
           b'[{"name":"x","type":"number","default":' + nested(DEEP) + b"}]}")
    resp = own.as_("user:alice").post(path, raw=raw)
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["error"] == "invalid_request" and "nest" in body["message"], body


def test_deep_nesting_is_refused_by_both_decoders() -> None:
    value = nested(DEEP, b'"\\u0000"')
    with pytest.raises(RequestInvalidError) as refused:
        v1_body.decode(index_body(value), PublishQueryIndexRequest, refuse_nul=True)
    assert "nest" in refused.value.message
    with pytest.raises(ApiError) as invalid:
        agent_body.decode(b'{"collectionId":"c","filters":[{"value":' + value + b"}]}",
                          QueryFieldsRequest)
    assert (invalid.value.status, invalid.value.code) == (400, "INVALID_REQUEST")


def test_no_depth_the_decoder_accepts_breaks_the_nul_check() -> None:
    """Just below the decoder's own bound, the NUL check of the decoded value (a walk in
    Python, one frame a level) must not run out of stack either: a 400 at every depth."""
    limit = sys.getrecursionlimit()
    for depth in range(limit - 200, limit + 10):
        with pytest.raises(RequestInvalidError) as refused:
            v1_body.decode(index_body(nested(depth, b'"\\u0000"')), PublishQueryIndexRequest,
                           refuse_nul=True)
        assert "nest" in refused.value.message or "U+0000" in refused.value.message, depth


def index_body(value: bytes) -> bytes:
    return (b'{"records":[{"id":"r","fields":[{"name":"f","type":"text","value":' + value
            + b"}]}]}")


def test_nesting_a_caller_may_use_still_decodes() -> None:
    found = msgspec.to_builtins(agent_body.decode(
        b'{"collectionId":"c","filters":[{"value":' + nested(64) + b"}]}", QueryFieldsRequest))
    assert json.dumps(found["filters"][0]["value"]) == nested(64).decode()


# --- shutdown: the 503 of the drain in the family's body -------------------------------------

async def _drained(path: str) -> tuple[int, dict[str, str], bytes]:
    started = asyncio.Event()

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        started.set()
        await asyncio.sleep(60)

    drain = Drain(slow)
    sent: list[Any] = []

    async def send(message: Any) -> None:
        sent.append(message)

    async def receive() -> Any:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "path": path, "method": "POST", "headers": []}
    task = asyncio.ensure_future(drain(scope, receive, send))
    await started.wait()
    assert await drain.expire() == 1
    await asyncio.gather(task, return_exceptions=True)
    # and one that arrives after the grace
    await drain(scope, receive, send)
    assert len(sent) == 4
    assert sent[0]["status"] == sent[2]["status"] and sent[1]["body"] == sent[3]["body"]
    headers = {k.decode(): v.decode() for k, v in sent[0]["headers"]}
    return sent[0]["status"], headers, sent[1]["body"]


def test_the_drain_answers_an_api_request_in_the_api_error_body() -> None:
    status, headers, body = asyncio.run(_drained("/api/agent/v1/context-packs"))
    assert status == 503
    found = json.loads(body)
    assert list(found) == ["code", "message"] and found["code"] == "SERVICE_UNAVAILABLE"
    assert headers["cache-control"] == "no-store" and headers["retry-after"] == "1"
    assert headers["content-length"] == str(len(body))


def test_the_drain_answers_a_v1_request_in_the_v1_error_body() -> None:
    status, headers, body = asyncio.run(_drained("/v1/contexts"))
    assert status == 503
    found = json.loads(body)
    assert list(found) == ["error", "message"] and found["error"] == "unavailable"
    assert "cache-control" not in headers


# --- content types: never checked (1.4; context-service-api.md 1.1.3) -----------------------

@pytest.mark.parametrize("content_type", [
    "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
    "application/octet-stream", "", "application/json; charset=latin-1"])
def test_the_content_type_is_not_checked(api: Api, content_type: str) -> None:
    own = namespaced(api, "acme")
    add_member(own, "user:alice", "owner", ws=own.ns)
    raw = json.dumps({"subject": {"kind": "user", "name": "bob"}, "role": "viewer"}).encode()
    resp = own.client.put(f"/v1/namespaces/{own.ns}/members", content=raw, headers={
        "X-Context-Subject": "user:alice", "Content-Type": content_type})
    assert resp.status_code == 200, resp.text
    raw = json.dumps({"name": "n", "scopes": ["context:read"], "expiresInDays": 1}).encode()
    resp = own.client.post(f"/api/w/{own.ns}/agent-credentials", content=raw, headers={
        "X-Context-Subject": "user:alice", "Content-Type": content_type})
    assert resp.status_code == 201, resp.text


# --- "only whitespace" is JSON's whitespace ----------------------------------------------------

@pytest.mark.parametrize("raw", [b"\x0c", b"\x0b", b" \x0c\n", b"\xef\xbb\xbf"])
def test_bytes_json_does_not_call_whitespace_are_a_malformed_body(raw: bytes) -> None:
    """Rule 2 (``request body is required``) is for no bytes or only whitespace; a form feed,
    a vertical tab or a byte order mark is not JSON whitespace (rule 3 refuses it after a
    value), so such a body is malformed, not absent."""
    with pytest.raises(RequestInvalidError) as refused:
        v1_body.decode(raw, PublishQueryIndexRequest)
    assert refused.value.message.startswith("malformed JSON body"), refused.value.message
    with pytest.raises(ApiError) as invalid:
        agent_body.decode(raw, QueryFieldsRequest)
    assert invalid.value.message.startswith("malformed JSON body"), invalid.value.message


@pytest.mark.parametrize("raw", [b"", b" ", b"\t\r\n "])
def test_json_whitespace_alone_is_no_body(raw: bytes) -> None:
    with pytest.raises(RequestInvalidError) as refused:
        v1_body.decode(raw, PublishQueryIndexRequest)
    assert refused.value.message == "request body is required"
    with pytest.raises(ApiError) as invalid:
        agent_body.decode(raw, QueryFieldsRequest)
    assert invalid.value.message == "request body is required"
