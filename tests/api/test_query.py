"""Query index publication and query through HTTP (spec 1.7, 2.4, 5): the worked example, every
check and message in its order, ordering, filters, paging with cursors, and index validity."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest

from tests.api.conftest import Api, context_body
from tests.api.namespaced import Namespaced, namespaced
from tests.support.api_helpers import fresh

# one service for the module: every test queries a namespace of its own (``api.ns``)
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
NS = "team1"  # the namespace of a client bound to none
NOT_FOUND = {"error": "not_found", "message": "context resource not found"}


def digest(seed: object) -> str:
    return hashlib.sha256(str(seed).encode()).hexdigest()


def invalid(detail: str) -> dict[str, str]:
    return {"error": "invalid_request", "message": f"invalid context resource: {detail}"}


def space(api: Api) -> str:
    """The namespace the helpers speak about: the test's own (``Namespaced``), or ``NS`` for the
    modules that import them with a client of their own service."""
    return api.ns if isinstance(api, Namespaced) else NS


def create(api: Api, name: str, type_: str = "memory", namespace: str | None = None) -> None:
    response = api.post("/v1/contexts", context_body(name, namespace or space(api), type_))
    assert response.status_code == 201, response.text


def publish_revision(api: Api, name: str, revision: str, namespace: str | None = None) -> None:
    body = {"id": revision, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync"}
    path = f"/v1/namespaces/{namespace or space(api)}/contexts/{name}/revisions"
    response = api.post(path, body)
    assert response.status_code == 201, response.text


def record(id_: str, context: str, revision: str, text: str, type_: str = "memory",
           **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": id_, "context": context, "type": type_, "revision": revision}
    if fields.get("title"):
        out["title"] = fields["title"]
    out["text"] = text
    if fields.get("keywords"):
        out["keywords"] = fields["keywords"]
    out["source"] = fields.get("source") or {"context": "", "type": "", "revision": ""}
    if fields.get("file"):
        out["file"] = fields["file"]
    return out


def put_index(api: Api, name: str, body: Any, namespace: str | None = None, **kw: Any) -> Any:
    path = f"/v1/namespaces/{namespace or space(api)}/contexts/{name}/query-index"
    return api.put(path, body, **kw)


def publish_index(api: Api, name: str, revision: str, records: list[dict[str, Any]],
                  namespace: str | None = None) -> None:
    response = put_index(api, name, {"revision": revision, "records": records}, namespace)
    assert response.status_code == 204, response.text


def indexed(api: Api, name: str, records: list[tuple[str, str]], type_: str = "memory",
            namespace: str | None = None) -> str:
    """A context of ``type_`` with a revision and an index of (id, text) records."""
    create(api, name, type_, namespace)
    revision = digest(name)
    publish_revision(api, name, revision, namespace)
    publish_index(api, name, revision,
                  [record(i, name, revision, t, type_) for i, t in records], namespace)
    return revision


def query(api: Api, body: Any, namespace: str | None = None, **kw: Any) -> Any:
    return api.post(f"/v1/namespaces/{namespace or space(api)}/query", body, **kw)


def hits(response: Any) -> list[tuple[int, str, str]]:
    assert response.status_code == 200, response.text
    return [(i["score"], i["record"]["context"], i["record"]["id"])
            for i in response.json()["items"]]


def cursor(offset: int, fingerprint: str) -> str:
    raw = json.dumps({"o": offset, "q": fingerprint}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


@pytest.fixture
def worked(api: Namespaced) -> str:
    """The spec's worked example in context ``notes``."""
    create(api, "notes")
    revision = digest("notes")
    publish_revision(api, "notes", revision)
    publish_index(api, "notes", revision, [
        record("a", "notes", revision, "Friday release schedule", title="Release schedule"),
        record("b", "notes", revision, "release schedule", title="Release"),
        record("c", "notes", revision, "nothing here", title="Unrelated"),
    ])
    return revision


# --- the worked example ------------------------------------------------------------------------


def test_worked_example_scores_orders_and_pages(api: Namespaced, worked: str) -> None:
    full = query(api, {"query": "release schedule"})
    assert hits(full) == [(8, "notes", "a"), (5, "notes", "b")]
    assert '"score":8,' in full.text and "nextCursor" not in full.json()
    first = query(api, {"query": "release schedule", "limit": 1})
    assert hits(first) == [(8, "notes", "a")]
    second = query(api, {"query": "release schedule", "limit": 1,
                         "cursor": first.json()["nextCursor"]})
    assert hits(second) == [(5, "notes", "b")]
    assert set(second.json()) == {"items"}


def test_result_shape_carries_revision_and_provenance(api: Namespaced) -> None:
    create(api, "kb", "knowledge")
    revision = digest("kb")
    publish_revision(api, "kb", revision)
    source = {"context": "project-state", "type": "state", "revision": digest("src")}
    full = record("k1", "kb", revision, "Deploy steps", "knowledge", title="Deploy",
                  keywords=["ops", "deploy"], source=source, file="knowledge/deploy.md")
    bare = record("k2", "kb", revision, "deploy", "knowledge")
    publish_index(api, "kb", revision, [full, bare])
    response = query(api, {"query": "deploy"})
    assert response.headers["content-type"].startswith("application/json")
    assert response.text == json.dumps(
        {"items": [{"score": 6, "record": full}, {"score": 1, "record": bare}]},
        separators=(",", ":"), ensure_ascii=False)


def test_publish_answers_204_with_position(api: Namespaced, worked: str) -> None:
    response = put_index(api, "notes", {"revision": worked, "records": []})
    assert response.status_code == 204 and response.content == b""
    assert int(response.headers["X-Context-Position"]) > 0


# --- publish: order of checks and messages -----------------------------------------------------


def test_publish_checks_subject_first(api: Namespaced) -> None:
    response = put_index(api.as_("robot:x"), "absent", b"", raw=b"")
    assert response.status_code == 400
    assert response.json()["message"].startswith("X-Context-Subject must be")


@pytest.mark.parametrize("raw", [b"", b"{", b"x" * (1024 * 1024 + 1), b'{"revision": 1}'])
def test_publish_checks_write_before_reading_the_body(api: Namespaced, raw: bytes) -> None:
    create(api, "notes")
    assert put_index(api, "absent", None, raw=raw).json() == NOT_FOUND
    reader = api.as_("user:reader")
    api.put(f"{api.contexts}/notes/grants",
            {"subject": {"kind": "user", "name": "reader"}, "permissions": ["read"]})
    response = put_index(reader, "notes", None, raw=raw)
    assert (response.status_code, response.json()) == (404, NOT_FOUND)


@pytest.mark.parametrize(("raw", "message"), [
    (b"", "request body is required"),
    (b"  \n", "request body is required"),
    (b"x" * (1024 * 1024 + 1), "request body too large"),
])
def test_publish_body_framing_messages(api: Namespaced, raw: bytes, message: str) -> None:
    create(api, "notes")
    response = put_index(api, "notes", None, raw=raw)
    assert response.json() == {"error": "invalid_request", "message": message}


@pytest.mark.parametrize("body", [
    [], {"revision": 1}, {"revision": "r", "records": [{"id": "a", "text": "t", "extra": 1}]},
    {"revision": "r", "records": {}}, {"revision": "r", "owner": "x"},
])
def test_publish_rejects_malformed_bodies(api: Namespaced, body: Any) -> None:
    create(api, "notes")
    response = put_index(api, "notes", body)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"


def test_publish_requires_memory_or_knowledge_before_anything_else(api: Namespaced) -> None:
    create(api, "ws", "workspace")
    response = put_index(api, "ws", {"revision": "wrong", "records": [{"id": ""}]})
    assert response.json() == invalid("query indexes require memory or knowledge contexts")


@pytest.mark.parametrize("revision", [None, "", "0" * 64])
def test_publish_requires_the_current_revision(api: Namespaced, revision: str | None) -> None:
    create(api, "notes")
    publish_revision(api, "notes", digest(1))
    body = {"revision": revision, "records": [{"id": "", "text": ""}]}
    response = put_index(api, "notes", body)
    assert response.json() == invalid(
        "query index revision must match the current context revision")


def test_publish_without_any_revision_is_refused(api: Namespaced) -> None:
    create(api, "notes")
    response = put_index(api, "notes", {"revision": digest(1), "records": []})
    assert response.json() == invalid(
        "query index revision must match the current context revision")


@pytest.mark.parametrize("bad", [
    {"id": "", "text": "x"}, {"text": "x"}, {"id": "a", "text": " \t\n"}, {"id": "a"},
    {"id": "a", "text": None},
])
def test_publish_requires_id_and_text_on_every_record(api: Namespaced, bad: dict[str, Any]) -> None:
    create(api, "notes")
    rev = digest(1)
    publish_revision(api, "notes", rev)
    wrong_identity = record("x", "other", rev, "fine")
    bad_record = {"context": "notes", "type": "memory", "revision": rev, **bad}
    response = put_index(api, "notes", {"revision": rev, "records": [wrong_identity, bad_record]})
    assert response.json() == invalid("query records require id and text")


@pytest.mark.parametrize("field,value", [
    ("context", "other"), ("context", ""), ("type", "knowledge"), ("revision", "0" * 64),
    ("revision", ""),
])
def test_publish_requires_record_identity(api: Namespaced, field: str, value: str) -> None:
    create(api, "notes")
    rev = digest(1)
    publish_revision(api, "notes", rev)
    bad = {**record("a", "notes", rev, "text"), field: value}
    response = put_index(api, "notes", {"revision": rev, "records": [bad]})
    assert response.json() == invalid("query record identity does not match its context")


def test_publish_replaces_the_previous_index_and_empty_is_valid(api: Namespaced,
                                                                worked: str) -> None:
    publish_index(api, "notes", worked, [record("z", "notes", worked, "fresh release")])
    assert hits(query(api, {"query": "release"})) == [(1, "notes", "z")]
    publish_index(api, "notes", worked, [])
    response = query(api, {"query": "release"})
    assert response.json() == {"items": []}


# --- query: order of checks and messages -------------------------------------------------------


def test_query_checks_subject_then_body(api: Namespaced) -> None:
    assert query(api.as_("nobody"), {}).json()["message"].startswith("X-Context-Subject")
    assert query(api, None, raw=b"").json()["message"] == "request body is required"
    assert query(api, None, raw=b" ").json()["message"] == "request body is required"
    too_large = b'{"query":"' + b"a" * (1024 * 1024) + b'"}'
    assert query(api, None, raw=too_large).json()["message"] == "request body too large"


@pytest.mark.parametrize("body", [
    {"limit": "3"}, {"limit": 3.0}, {"limit": True}, {"query": 1}, {"ids": "a"},
    {"contexts": [1]}, {"Query": "x"}, {"cursor": 5}, [], "x",
])
def test_query_rejects_malformed_bodies(api: Namespaced, body: Any) -> None:
    response = query(api, body)
    assert response.status_code == 400 and response.json()["error"] == "invalid_request"


def test_query_rejects_trailing_data(api: Namespaced) -> None:
    assert query(api, None, raw=b'{"query":"x"} {}').status_code == 400


def test_named_context_is_resolved_before_request_checks(api: Namespaced, worked: str) -> None:
    assert query(api, {"contexts": ["absent"]}).json() == NOT_FOUND
    assert query(api, {"contexts": ["notes", "absent"], "limit": -1}).json() == NOT_FOUND
    assert query(api, {"contexts": ["notes"]}).json() == invalid("query or ids is required")


@pytest.mark.parametrize("body", [{}, {"query": ""}, {"query": " \t\n"}, {"ids": []},
                                  {"ids": None, "query": None}, {"limit": 500}])
def test_query_or_ids_is_required(api: Namespaced, body: dict[str, Any]) -> None:
    assert query(api, body).json() == invalid("query or ids is required")


@pytest.mark.parametrize("limit", [-1, 101, 2**70, -(2**70)])
def test_limit_must_be_between_1_and_100(api: Namespaced, limit: int) -> None:
    response = query(api, {"query": "x", "limit": limit, "cursor": "%%%"})
    assert response.json() == invalid("limit must be between 1 and 100")


def test_limit_edges(api: Namespaced) -> None:
    indexed(api, "many", [(f"r{i:03}", "word") for i in range(120)])
    assert len(hits(query(api, {"query": "word", "limit": 1}))) == 1
    assert len(hits(query(api, {"query": "word", "limit": 100}))) == 100
    default = query(api, {"query": "word", "limit": 0})
    assert len(hits(default)) == 20 and "nextCursor" in default.json()
    assert len(hits(query(api, {"query": "word"}))) == 20
    assert len(hits(query(api, {"query": "word", "limit": None}))) == 20


# --- cursors ------------------------------------------------------------------------------------


def test_cursor_round_trip_through_every_page(api: Namespaced) -> None:
    indexed(api, "many", [(f"r{i:02}", "word " * (i % 4 + 1)) for i in range(23)])
    expected = hits(query(api, {"query": "word", "limit": 100}))
    pages: list[tuple[int, str, str]] = []
    body: dict[str, Any] = {"query": "word", "limit": 5}
    while True:
        response = query(api, body)
        pages.extend(hits(response))
        if "nextCursor" not in response.json():
            break
        body = {"query": "word", "limit": 5, "cursor": response.json()["nextCursor"]}
    assert pages == expected and len(pages) == 23


def test_cursor_is_base64url_json_bound_to_the_fingerprint(api: Namespaced, worked: str) -> None:
    body = {"contexts": ["notes"], "query": "release schedule", "limit": 1}
    token = query(api, body).json()["nextCursor"]
    assert "=" not in token
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    key = hashlib.sha256(b'{"contexts":["notes"],"query":"release schedule"}').hexdigest()
    assert decoded == {"o": 1, "q": key[:16]}
    assert base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)) == (
        b'{"o":1,"q":"' + key[:16].encode() + b'"}')


def test_limit_may_change_between_pages(api: Namespaced, worked: str) -> None:
    token = query(api, {"query": "release schedule", "limit": 1}).json()["nextCursor"]
    response = query(api, {"query": "release schedule", "limit": 50, "cursor": token})
    assert hits(response) == [(5, "notes", "b")]


def test_filter_order_does_not_change_the_fingerprint(api: Namespaced, worked: str) -> None:
    body = {"query": "release", "types": ["memory", "knowledge"], "limit": 1}
    token = query(api, body).json()["nextCursor"]
    again = {**body, "types": ["knowledge", "memory"], "cursor": token}
    assert hits(query(api, again)) == [(4, "notes", "b")]


@pytest.mark.parametrize("change", [
    {"query": "release  schedule"}, {"query": "schedule release"}, {"types": ["memory"]},
    {"contexts": ["notes"]}, {"ids": ["a", "b"]}, {"sourceContexts": ["x"]},
    {"revisions": ["r"]}, {"contexts": ["notes", "notes"]},
])
def test_changed_request_with_an_old_cursor_is_refused(api: Namespaced, worked: str,
                                                       change: dict[str, Any]) -> None:
    base: dict[str, Any] = {"query": "release schedule", "limit": 1}
    token = query(api, base).json()["nextCursor"]
    response = query(api, {**base, **change, "cursor": token})
    assert response.json() == invalid("invalid query cursor")


def _tampered(token: str) -> list[str]:
    fingerprint = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))["q"]
    raw = base64.urlsafe_b64encode
    return [
        token + "=", token + "==", token[:-1], token + "A", "!" + token, token.replace("e", "+"),
        "", "not a cursor", "e30", raw(b"[1]").decode(), raw(b'{"q":"' + fingerprint.encode()
                                                             + b'"}').decode().rstrip("="),
        cursor(-1, fingerprint), cursor(0, "0" * 16), cursor(0, fingerprint.upper()),
        raw(b'{"o":"1","q":"' + fingerprint.encode() + b'"}').decode().rstrip("="),
        raw(b'{"o":1.0,"q":"' + fingerprint.encode() + b'"}').decode().rstrip("="),
        raw(b'{"o":1,"q":"' + fingerprint.encode() + b'","x":1}').decode().rstrip("="),
        raw(b'{"o":1,"q":"' + fingerprint.encode() + b'"} ').decode().rstrip("="),
        raw(b'\xff\xfe').decode().rstrip("="),
    ]


def test_tampered_cursors_are_invalid(api: Namespaced, worked: str) -> None:
    body: dict[str, Any] = {"query": "release schedule", "limit": 1}
    token = query(api, body).json()["nextCursor"]
    for bad in _tampered(token):
        response = query(api, {**body, "cursor": bad})
        if bad == "":
            assert hits(response) == [(8, "notes", "a")]  # empty means the first page
            continue
        assert response.json() == invalid("invalid query cursor"), bad


def test_stale_cursor_beyond_the_results(api: Namespaced, worked: str) -> None:
    body: dict[str, Any] = {"query": "release schedule", "limit": 1}
    token = query(api, body).json()["nextCursor"]
    fingerprint = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))["q"]
    at_end = query(api, {**body, "cursor": cursor(2, fingerprint)})
    assert at_end.json() == {"items": []}
    for offset in (3, 2**62, 2**64 - 1):
        response = query(api, {**body, "cursor": cursor(offset, fingerprint)})
        assert response.json() == invalid("cursor is beyond the result set")
    # The results shrink under a cursor: the old page boundary now lies past the end.
    publish_index(api, "notes", worked, [record("a", "notes", worked, "release")])
    response = query(api, {**body, "cursor": cursor(2, fingerprint)})
    assert response.json() == invalid("cursor is beyond the result set")


def test_cursor_checks_follow_limit_checks(api: Namespaced) -> None:
    assert query(api, {"query": "x", "cursor": "%"}).json() == invalid("invalid query cursor")
    assert query(api, {"cursor": "%"}).json() == invalid("query or ids is required")


# --- ordering, filters, ids ---------------------------------------------------------------------


def test_ties_order_by_context_then_id_by_code_point(api: Namespaced) -> None:
    ids = ["b", "B", "a10", "a9", "é", "z", "Z", "a"]
    indexed(api, "beta", [(i, "same") for i in ids])
    indexed(api, "alpha", [("zz", "same"), ("A", "same same")])
    found = hits(query(api, {"query": "same"}))
    assert found == [(2, "alpha", "A"), (1, "alpha", "zz")] + [
        (1, "beta", i) for i in sorted(ids)]
    assert [i for _, c, i in found if c == "beta"] == ["B", "Z", "a", "a10", "a9", "b", "z", "é"]


def test_duplicate_ids_keep_publish_order(api: Namespaced) -> None:
    create(api, "dup")
    rev = digest("dup")
    publish_revision(api, "dup", rev)
    publish_index(api, "dup", rev, [record("x", "dup", rev, "one word", file="2"),
                                    record("x", "dup", rev, "word", file="1")])
    items = query(api, {"query": "word"}).json()["items"]
    assert [i["record"]["file"] for i in items] == ["2", "1"]


def test_repeated_query_terms_count_twice(api: Namespaced) -> None:
    indexed(api, "notes", [("a", "release notes"), ("b", "schedule schedule schedule")])
    assert hits(query(api, {"query": "release release schedule"})) == [
        (3, "notes", "b"), (2, "notes", "a")]


def test_ids_alone_score_one_and_ids_with_query_intersect(api: Namespaced) -> None:
    indexed(api, "notes", [("a", "alpha"), ("b", "beta"), ("c", "alpha beta")])
    assert hits(query(api, {"ids": ["c", "a", "zzz"]})) == [(1, "notes", "a"), (1, "notes", "c")]
    assert hits(query(api, {"ids": ["a", "b"], "query": "beta"})) == [(1, "notes", "b")]
    assert hits(query(api, {"ids": ["a"], "query": "beta"})) == []


def test_a_query_without_tokens_matches_every_record(api: Namespaced) -> None:
    indexed(api, "notes", [("b", "x"), ("a", "y")])
    assert hits(query(api, {"query": "?!-"})) == [(1, "notes", "a"), (1, "notes", "b")]


def test_filters(api: Namespaced) -> None:
    create(api, "kb", "knowledge")
    rev = digest("kb")
    publish_revision(api, "kb", rev)
    src = {"context": "origin", "type": "state", "revision": digest(0)}
    publish_index(api, "kb", rev, [record("k1", "kb", rev, "term", "knowledge", source=src),
                                   record("k2", "kb", rev, "term", "knowledge")])
    mem_rev = indexed(api, "mem", [("m1", "term")])
    everything = [(1, "kb", "k1"), (1, "kb", "k2"), (1, "mem", "m1")]
    assert hits(query(api, {"query": "term"})) == everything
    assert hits(query(api, {"query": "term", "types": ["memory"]})) == [(1, "mem", "m1")]
    assert hits(query(api, {"query": "term", "types": ["state"]})) == []
    assert hits(query(api, {"query": "term", "sourceContexts": ["origin", "origin"]})) == [
        (1, "kb", "k1")]
    assert hits(query(api, {"query": "term", "sourceContexts": [""]})) == [
        (1, "kb", "k2"), (1, "mem", "m1")]
    assert hits(query(api, {"query": "term", "revisions": [mem_rev]})) == [(1, "mem", "m1")]
    assert hits(query(api, {"query": "term", "contexts": ["mem", "kb", "mem"]})) == everything
    assert hits(query(api, {"ids": ["k1", "m1"], "types": ["knowledge"]})) == [(1, "kb", "k1")]


def test_unicode_tokens_match(api: Namespaced) -> None:
    indexed(api, "notes", [("a", "Straße ÜBER naïve 東京 ٣٤"), ("b", "x²y Ⅻ")])
    assert hits(query(api, {"query": "straße über"})) == [(2, "notes", "a")]
    assert hits(query(api, {"query": "٣٤ 東京"})) == [(2, "notes", "a")]
    assert hits(query(api, {"query": "x y"})) == [(2, "notes", "b")]
    assert hits(query(api, {"query": "x²y"})) == [(2, "notes", "b")]



def test_any_json_string_works_as_id_and_source(api: Namespaced) -> None:
    create(api, "odd")
    rev = digest("odd")
    publish_revision(api, "odd", rev)
    odd = ["nul\u0000id", "tab\tand\\back", "\u00e9\U0001f600", "line\nfeed", "quote\"d"]
    source = {"context": "src\u0000x", "type": "state", "revision": ""}
    publish_index(api, "odd", rev, [record(i, "odd", rev, "common", source=source) for i in odd])
    assert [i for _, _, i in hits(query(api, {"query": "common"}))] == sorted(odd)
    for one in odd:
        assert hits(query(api, {"ids": [one]})) == [(1, "odd", one)]
    assert len(hits(query(api, {"query": "common", "sourceContexts": ["src\u0000x"]}))) == 5
    assert hits(query(api, {"query": "common", "sourceContexts": ["src"]})) == []
    item = query(api, {"ids": ["nul\u0000id"]}).json()["items"][0]["record"]
    assert item["id"] == "nul\u0000id" and item["source"] == source

# --- access --------------------------------------------------------------------------------------


def test_outsider_sees_nothing_implicitly_and_404_when_naming(api: Namespaced, worked: str) -> None:
    outsider = api.as_("user:mallory")
    assert query(outsider, {"query": "release"}).json() == {"items": []}
    assert query(outsider, {"contexts": ["notes"], "query": "release"}).json() == NOT_FOUND
    assert query(outsider, {"contexts": ["notes"]}).json() == NOT_FOUND


def test_any_permission_includes_implicitly_but_naming_needs_read(api: Namespaced,
                                                                  worked: str) -> None:
    api.put(f"{api.contexts}/notes/grants",
            {"subject": {"kind": "agent", "name": "admin-only"}, "permissions": ["administer"]})
    agent = api.as_("agent:admin-only")
    assert hits(query(agent, {"query": "release"})) == [(4, "notes", "a"), (4, "notes", "b")]
    assert query(agent, {"contexts": ["notes"], "query": "release"}).json() == NOT_FOUND


def test_bootstrap_admin_sees_every_context(api: Namespaced, worked: str) -> None:
    admin = api.as_("service:context-service-admin")
    assert len(hits(query(admin, {"query": "release", "contexts": ["notes"]}))) == 2
    assert len(hits(query(admin, {"query": "release"}))) == 2


def test_namespaces_isolate(api: Namespaced, worked: str) -> None:
    other = fresh("team")
    assert query(api, {"query": "release"}, namespace=other).json() == {"items": []}
    assert query(api, {"query": "release", "contexts": ["notes"]},
                 namespace=other).json() == NOT_FOUND


# --- index validity ------------------------------------------------------------------------------


def test_new_revision_makes_the_context_unavailable_until_republished(api: Namespaced,
                                                                      worked: str) -> None:
    publish_revision(api, "notes", digest("next"))
    response = query(api, {"query": "release"})
    assert response.json() == {"items": [], "unavailable": ["notes"]}
    publish_index(api, "notes", digest("next"),
                  [record("n", "notes", digest("next"), "release")])
    assert query(api, {"query": "release"}).json()["items"][0]["record"]["id"] == "n"
    assert "unavailable" not in query(api, {"query": "release"}).json()


def test_unavailable_lists_authorized_memory_and_knowledge_by_name(api: Namespaced) -> None:
    create(api, "zeta")
    create(api, "alpha", "knowledge")
    create(api, "ws", "workspace")
    create(api, "st", "state")
    indexed(api, "mid", [("a", "hello")])
    response = query(api, {"query": "hello"})
    assert response.json()["unavailable"] == ["alpha", "zeta"]
    assert hits(response) == [(1, "mid", "a")]
    assert query(api, {"query": "hello", "contexts": ["ws", "zeta"]}).json() == {
        "items": [], "unavailable": ["zeta"]}
    assert query(api.as_("user:mallory"), {"query": "hello"}).json() == {"items": []}


def test_revision_republished_back_keeps_the_index_valid(api: Namespaced, worked: str) -> None:
    publish_revision(api, "notes", digest("other"))
    publish_revision(api, "notes", worked)
    assert len(hits(query(api, {"query": "release"}))) == 2


def test_deletion_drops_the_index_and_a_new_generation_starts_empty(api: Namespaced,
                                                                     worked: str) -> None:
    assert api.delete(f"{api.contexts}/notes").status_code == 204
    assert query(api, {"query": "release"}).json() == {"items": []}
    assert query(api, {"query": "release", "contexts": ["notes"]}).json() == NOT_FOUND
    create(api, "notes")
    assert query(api, {"query": "release"}).json() == {"items": [], "unavailable": ["notes"]}
    publish_revision(api, "notes", worked)
    assert query(api, {"query": "release"}).json() == {"items": [], "unavailable": ["notes"]}


def test_scores_beyond_32_bits_are_exact(api: Namespaced) -> None:
    indexed(api, "big", [("a", "a " * 5000 + "b"), ("b", "b b")])
    single = query(api, {"query": "a " * 500_000})
    assert hits(single) == [(2_500_000_000, "big", "a")]
    many = query(api, {"query": "a " * 500_000 + "b"})
    assert hits(many) == [(2_500_000_001, "big", "a"), (2, "big", "b")]
    assert '"score":2500000001,' in many.text


def test_publish_near_the_body_limit(api: Namespaced) -> None:
    create(api, "large")
    rev = digest("large")
    publish_revision(api, "large", rev)
    records = [record(f"r{i:04}", "large", rev, "word " * 300) for i in range(600)]
    body = {"revision": rev, "records": records}
    assert len(json.dumps(body)) < 1024 * 1024
    assert put_index(api, "large", body).status_code == 204
    assert len(hits(query(api, {"query": "word", "limit": 100}))) == 100
