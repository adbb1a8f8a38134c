"""Spec 1.1: response framing, strict request bodies and routing, through HTTP."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.conftest import Api, each
from tests.api.namespaced import Namespaced, namespaced

# one service for the module: every test names a namespace of its own (``api.ns``)
pytestmark = pytest.mark.shared_service
MIB = 1024 * 1024
REVISION = {"id": "a" * 64, "createdAt": "2026-05-01T10:11:12Z", "operation": "sync"}


def assert_error(resp: Any, status: int, code: str, message: str) -> None:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"] == "application/json"
    assert resp.text == json.dumps({"error": code, "message": message},
                                   separators=(",", ":"), ensure_ascii=False)


def assert_invalid(resp: Any) -> str:
    """A 400 invalid_request whose (free) message is returned for further checks."""
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert list(body) == ["error", "message"]
    assert body["error"] == "invalid_request"
    assert body["message"]
    message: str = body["message"]
    return message



def padded(body: dict[str, Any], total: int) -> bytes:
    raw = json.dumps(body).encode()
    return raw + b" " * (total - len(raw))


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


@pytest.fixture
def ctx(api: Namespaced) -> Namespaced:
    """``api`` with the namespace's ``research-memory`` (``ctx.context``) created."""
    assert api.post("/v1/contexts", api.context_body()).status_code == 201
    return api


# --- framing ------------------------------------------------------------------------------------

def test_healthz_is_compact_json(api: Namespaced) -> None:
    resp = api.get("/healthz")
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "application/json"
    assert resp.text == '{"status":"ok"}'


def test_create_answers_the_spec_example_byte_for_byte(api: Namespaced) -> None:
    resp = api.post("/v1/contexts", api.context_body())
    assert resp.status_code == 201
    assert resp.headers["content-type"] == "application/json"
    assert resp.text == (
        '{"name":"research-memory","namespace":"' + api.ns + '","type":"memory",'
        '"status":"provisioning",'
        '"storage":{"backend":"pvc","size":"5Gi","accessMode":"ReadWriteMany",'
        '"storageClass":"ibm-scale-csi"},"attachment":{"kind":"pvc",'
        '"claimName":"context-research-memory"}}')


def test_non_ascii_is_written_unescaped(ctx: Namespaced) -> None:
    body = {**REVISION, "producer": "zoë <&> 世界"}
    resp = ctx.post(ctx.context + "/revisions", body)
    assert resp.status_code == 201
    assert '"producer":"zoë <&> 世界"' in resp.content.decode("utf-8")


def test_no_content_has_no_body(ctx: Namespaced) -> None:
    resp = ctx.delete(ctx.context)
    assert resp.status_code == 204
    assert resp.content == b""


# --- request bodies (1.1.3) ---------------------------------------------------------------------

def test_body_of_exactly_one_mebibyte_is_accepted(api: Namespaced) -> None:
    resp = api.post("/v1/contexts", raw=padded(api.context_body(), MIB))
    assert resp.status_code == 201, resp.text


def test_body_one_byte_over_a_mebibyte_is_too_large(api: Namespaced) -> None:
    resp = api.post("/v1/contexts", raw=padded(api.context_body(), MIB + 1))
    assert_error(resp, 400, "invalid_request", "request body too large")


def test_a_huge_body_is_still_too_large_not_a_server_error(api: Namespaced) -> None:
    resp = api.post("/v1/contexts", raw=b" " * (80 * MIB))
    assert_error(resp, 400, "invalid_request", "request body too large")


def test_size_is_checked_before_emptiness(api: Namespaced) -> None:
    resp = api.post("/v1/contexts", raw=b" " * (MIB + 1))
    assert_error(resp, 400, "invalid_request", "request body too large")


def test_empty_or_whitespace_body_is_required(api: Namespaced) -> None:
    each([b"", b" ", b"\n\t \r\n"], lambda raw: assert_error(
        api.post("/v1/contexts", raw=raw), 400, "invalid_request", "request body is required"))


def test_body_must_be_one_json_object(api: Namespaced) -> None:
    cases = [b"[]", b'"text"', b"42", b"null", b"true", b"{", b'{"name":}', b"{'name':'a'}"]
    each(cases, lambda raw: assert_invalid(api.post("/v1/contexts", raw=raw)))


def test_trailing_bytes_after_the_value_are_rejected(api: Namespaced) -> None:
    valid = json.dumps(api.context_body()).encode()
    each([b"x", b"{}", b"[]", b"0", b'"more"', b","], lambda trailer: assert_invalid(
        api.post("/v1/contexts", raw=valid + b" " + trailer)))
    assert api.get(api.contexts).json() == {"items": []}


def test_trailing_whitespace_is_allowed(api: Namespaced) -> None:
    raw = b"\n " + json.dumps(api.context_body()).encode() + b" \r\n\t"
    assert api.post("/v1/contexts", raw=raw).status_code == 201


def test_unknown_and_server_owned_fields_are_rejected(api: Namespaced) -> None:
    def probe(field: str) -> None:
        assert field in assert_invalid(api.post("/v1/contexts", {**api.context_body(), field: "x"}))

    each(["status", "owner", "attachment", "effectiveAccess", "consumers", "currentRevision",
          "revisions", "foo"], probe)
    assert api.get(api.contexts).json() == {"items": []}


def test_unknown_nested_field_names_its_path(api: Namespaced) -> None:
    body = api.context_body()
    body["storage"]["foo"] = 1
    message = assert_invalid(api.post("/v1/contexts", body))
    assert "foo" in message and "storage" in message


def test_keys_are_case_sensitive(api: Namespaced) -> None:
    body = api.context_body()
    body["Name"] = body.pop("name")
    assert_invalid(api.post("/v1/contexts", body))
    body = api.context_body()
    body["storage"]["accessmode"] = body["storage"].pop("accessMode")
    assert_invalid(api.post("/v1/contexts", body))


def test_null_is_treated_as_absent(api: Namespaced) -> None:
    body = {**api.context_body(), "type": None}
    assert_error(api.post("/v1/contexts", body), 400, "invalid_request",
                 "type must be workspace, state, memory, knowledge, or artifacts")
    body = {**api.context_body(), "storage": None}
    assert_error(api.post("/v1/contexts", body), 400, "invalid_request",
                 "storage.backend must be pvc")
    body = api.context_body()
    body["storage"]["storageClass"] = None
    resp = api.post("/v1/contexts", body)
    assert resp.status_code == 201
    assert "storageClass" not in resp.json()["storage"]


def test_strings_and_objects_are_strictly_typed(api: Namespaced) -> None:
    cases = [("name", 5), ("name", ["a"]), ("namespace", True), ("type", {"a": 1}),
             ("storage", "pvc"), ("storage", [])]
    each(cases, lambda c: assert_invalid(
        api.post("/v1/contexts", {**api.context_body(), c[0]: c[1]})))


def test_integer_fields_require_json_integers(ctx: Namespaced) -> None:
    def probe(case: tuple[str, Any]) -> None:
        field, value = case
        resp = ctx.post(ctx.context + "/revisions", {**REVISION, field: value})
        assert field in assert_invalid(resp)

    each([("files", 3.0), ("files", "3"), ("files", 1e2), ("files", True), ("bytes", 3.5),
          ("bytes", "0")], probe)
    assert ctx.get(ctx.context + "/revisions").json() == {"items": []}


def test_boolean_fields_require_json_booleans(ctx: Namespaced) -> None:
    each(["true", 1, 0, "false"], lambda value: assert_invalid(ctx.put(
        ctx.context + "/consumers",
        {"kind": "agent", "name": "a", "accessMode": "readOnly", "active": value})))


def test_content_type_is_not_checked(api: Namespaced) -> None:
    resp = api.post("/v1/contexts", raw=json.dumps(api.context_body()).encode(),
                    headers={"Content-Type": "text/plain"})
    assert resp.status_code == 201


def test_routes_without_body_ignore_one(ctx: Namespaced) -> None:
    junk = b"not json at all {"
    assert ctx.request("GET", ctx.context, raw=junk).status_code == 200
    assert ctx.request("GET", ctx.contexts, raw=junk).status_code == 200
    assert ctx.request("GET", ctx.context + "/audit", raw=junk).status_code == 200
    assert ctx.request("DELETE", ctx.context, raw=junk).status_code == 204


# --- routing (1.1.4) ----------------------------------------------------------------------------

def test_unknown_paths_answer_route_not_found(ctx: Namespaced) -> None:
    ns = f"/v1/namespaces/{ctx.ns}"
    paths = ["/", "/v1", "/v1/context", ns, "/V1/contexts", ns + "/Contexts",
             ns + "/contexts/x/unknown", ns + "/contexts/x/grants/extra", "/healthz/",
             ns + "/contexts/", ctx.context + "/", ctx.context + "/grants/"]
    each(paths, lambda path: assert_error(ctx.get(path), 404, "not_found", "route not found"))
    each(["/v1/contexts/", ctx.context + "/revisions/"], lambda path: assert_error(
        ctx.post(path, ctx.context_body()), 404, "not_found", "route not found"))


def test_an_empty_segment_names_no_route(ctx: Namespaced) -> None:
    """Paths match exactly: the server collapsed ``//`` into ``/``, so a path of another shape
    reached a route."""
    ns = f"/v1/namespaces/{ctx.ns}"
    paths = [f"/v1//namespaces/{ctx.ns}/contexts", ns + "//contexts", ns + "/contexts//",
             ctx.context.replace("/contexts/", "/contexts//"), "/healthz//"]
    each(paths, lambda path: assert_error(ctx.get(path), 404, "not_found", "route not found"))
    assert ctx.get(ns + "/contexts").status_code == 200
    agent = ctx.post("/api/agent/v1//context-sets/list", {})  # in the agent API's body
    assert (agent.status_code, agent.json()) == (404, {"code": "NOT_FOUND",
                                                       "message": "route not found"})


def test_known_path_with_other_method_is_405(ctx: Namespaced) -> None:
    def probe(case: tuple[str, str, str]) -> None:
        method, path, allow = case
        resp = ctx.request(method, path, raw=b"{}")
        assert_error(resp, 405, "method_not_allowed", "method not allowed")
        assert resp.headers["allow"] == allow

    each([("GET", "/v1/contexts", "POST"), ("PUT", "/v1/contexts", "POST"),
          ("POST", "/healthz", "GET"), ("POST", ctx.contexts, "GET"),
          ("POST", ctx.context, "GET, DELETE"), ("PATCH", ctx.context, "GET, DELETE"),
          ("PUT", ctx.context + "/revisions", "GET, POST"),
          ("POST", ctx.context + "/grants", "GET, PUT, DELETE"),
          ("POST", ctx.context + "/consumers", "GET, PUT, DELETE"),
          ("DELETE", ctx.context + "/audit", "GET")],
         probe)
    assert ctx.get(ctx.context).status_code == 200


def test_405_wins_over_a_malformed_subject(ctx: Namespaced) -> None:
    resp = ctx.as_("nonsense").request("POST", ctx.context)
    assert resp.status_code == 405


def test_path_parameters_are_percent_decoded(ctx: Namespaced) -> None:
    encoded = ctx.ns[:-1] + f"%{ord(ctx.ns[-1]):02X}"  # its last character, as team%31
    resp = ctx.get(f"/v1/namespaces/{encoded}/contexts/research%2Dmemory")
    assert resp.status_code == 200
    assert (resp.json()["namespace"], resp.json()["name"]) == (ctx.ns, "research-memory")


def test_path_parameters_are_not_validated(ctx: Namespaced) -> None:
    paths = [ctx.contexts + "/RESEARCH-MEMORY",
             f"/v1/namespaces/{ctx.ns.capitalize()}/contexts/research-memory",
             ctx.contexts + "/research_memory",
             ctx.contexts + "/" + "a" * 300,
             ctx.contexts + "/x%20y"]
    each([p + s for p in paths for s in ("", "/revisions", "/grants", "/consumers", "/audit")],
         lambda path: assert_error(ctx.get(path), 404, "not_found", "context resource not found"))


def test_unknown_query_parameters_are_ignored(ctx: Namespaced) -> None:
    assert ctx.get(ctx.context + "?foo=bar&force=true").status_code == 200
    assert ctx.get(ctx.contexts + "?x=1").json()["items"][0]["name"] == (
        "research-memory")


def test_options_is_not_a_method_of_the_api(api: Namespaced) -> None:
    r = api.request("OPTIONS", api.contexts + "/x/grants")
    assert r.status_code == 405
    assert r.json() == {"error": "method_not_allowed", "message": "method not allowed"}
    assert r.headers["allow"] == "GET, PUT, DELETE"


# --- strings PostgreSQL cannot store ------------------------------------------------------------

NUL_BODIES = [  # (method, path below the context, body, where)
    ("POST", "/revisions", {**REVISION, "producer": "a\u0000b"}, "$.producer"),
    ("POST", "/revisions",
     {**REVISION, "sources": [{"context": "c", "type": "t\u0000", "revision": "b" * 64}]},
     "$.sources[0].type"),
    ("PUT", "/grants", {"subject": {"kind": "agent", "name": "x\u0000"},
                        "permissions": ["read"]}, "$.subject.name"),
    ("PUT", "/consumers", {"kind": "agent", "name": "n\u0000", "accessMode": "readOnly"},
     "$.name"),
]


@pytest.mark.parametrize(("method", "path", "body", "where"), NUL_BODIES)
def test_a_string_holding_nul_is_refused_and_the_views_keep_working(
        ctx: Namespaced, method: str, path: str, body: dict[str, Any], where: str) -> None:
    """A NUL reaching the log would stop every view that stores the string (PostgreSQL text
    cannot hold it): it is refused at decoding, and reads go on answering."""
    assert_error(ctx.request(method, ctx.context + path, body), 400, "invalid_request",
                 f'strings cannot contain U+0000 at "{where}"')
    assert ctx.get(ctx.context).status_code == 200
    assert ctx.post(ctx.context + "/revisions", REVISION).status_code == 201
    assert ctx.get(ctx.context + "/revisions").json()["items"][-1]["id"] == REVISION["id"]


@pytest.mark.parametrize("query", ["asOfPosition=\u00b2", "asOfPosition=99999999999999999999",
                                   "asOfPosition="])
def test_a_position_that_is_not_a_log_position_is_invalid(ctx: Namespaced, query: str) -> None:
    assert_error(ctx.get(ctx.context + "?" + query), 400, "invalid_request",
                 "asOfPosition must be a non-negative integer")


def test_a_limit_of_other_digits_is_invalid(ctx: Namespaced) -> None:
    assert_error(ctx.get(ctx.context + "/history?limit=\u00b2"), 400, "invalid_request",
                 "limit must be between 1 and 1000")
