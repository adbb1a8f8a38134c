"""Context-set administration over HTTP (agent-context-api.md §6): permissions, every validation
message and limit at and beyond its edge, the 404/409 rules, identical-content no-ops, archiving,
read-your-writes, and the binding of credentials to active sets."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from tests.api.conftest import Api, each, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import (
    archive_set,
    create_set,
    credentials,
    seed_workspace,
    sets,
)
from tests.api.sets_support import ADMIN, CFO_ANSWER, set_body
from tests.support.api_helpers import fresh

# one service for the module: every test's workspace is a namespace of its own (``ws.ns``)
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
WS_NOT_FOUND = {"error": "not_found", "message": "workspace not found"}
SET_NOT_FOUND = {"error": "not_found", "message": "context set not found"}
ARCHIVED = {"error": "conflict", "message": "context set conflict: context set is archived"}


def bad(message: str) -> dict[str, str]:
    return {"error": "invalid_request", "message": message}


@pytest.fixture
def ws(api: Api) -> Namespaced:
    """A workspace of the test's own with one member per role, as its owner ``user:alice``."""
    own = namespaced(api, "acme")
    seed_workspace(own)
    return own.as_("user:alice")


# --- permissions --------------------------------------------------------------------------------

def test_non_members_and_members_without_the_permission_see_no_workspace(ws: Namespaced) -> None:
    create_set(ws)
    api = ws
    body = set_body("other")
    for caller in ("user:zed", "agent:alice"):
        who = api.as_(caller)
        expect(who.get(sets(ws)), 404, WS_NOT_FOUND)
        expect(who.get(f"{sets(ws)}/finance"), 404, WS_NOT_FOUND)
        expect(who.post(sets(ws), body), 404, WS_NOT_FOUND)
        expect(who.put(f"{sets(ws)}/finance", body), 404, WS_NOT_FOUND)
        expect(who.delete(f"{sets(ws)}/finance"), 404, WS_NOT_FOUND)
    for caller in ("user:mia", "user:vic"):  # context:read only
        who = api.as_(caller)
        assert who.get(sets(ws)).status_code == 200
        assert who.get(f"{sets(ws)}/finance").status_code == 200
        expect(who.post(sets(ws), body), 404, WS_NOT_FOUND)
        expect(who.put(f"{sets(ws)}/finance", set_body()), 404, WS_NOT_FOUND)
        expect(who.delete(f"{sets(ws)}/finance"), 404, WS_NOT_FOUND)
    # the permission comes before the body: a member without it learns nothing from a bad body
    expect(api.as_("user:vic").post(sets(ws), raw=b"{"), 404, WS_NOT_FOUND)
    assert api.as_("user:adam").post(sets(ws), set_body("by-admin")).status_code == 201
    expect(api.as_("user:alice").get(f"/v1/namespaces/{fresh('elsewhere')}/context-sets"), 404,
           WS_NOT_FOUND)


def test_the_subject_header_comes_first(ws: Namespaced) -> None:
    expect(ws.as_("robot:x").post(sets(ws), raw=b"{"), 400, bad(
        "X-Context-Subject must be kind:name with kind user, agent, workload or service"))
    expect(ws.as_("robot:x").get(f"{sets(ws)}/finance"), 400, bad(
        "X-Context-Subject must be kind:name with kind user, agent, workload or service"))


def test_the_bootstrap_administrator_manages_sets_of_any_namespace(api: Api) -> None:
    admin = api.as_(ADMIN)
    path = f"/v1/namespaces/{fresh('empty')}/context-sets"
    resp = admin.post(path, set_body())
    assert resp.status_code == 201, resp.text
    assert admin.get(path).json()["items"] == [resp.json()]
    expect(api.as_("user:alice").get(path), 404, WS_NOT_FOUND)


# --- create, read, list -------------------------------------------------------------------------

def test_create_answers_the_set_in_key_order_and_is_read_back(ws: Namespaced) -> None:
    body = set_body(description="Finance answers", verifiedAnswers=[CFO_ANSWER, {
        "id": "hq", "question": "Where is the head office?", "answer": "Zurich."}],
        definitions=[{"term": "ARR", "definition": "Annual recurring revenue.",
                      "aliases": ["annual recurring revenue"]},
                     {"term": "Churn", "definition": "Customers lost.", "aliases": []}],
        instructions=[{"id": "cite", "text": "Cite every figure."}],
        requiredEvidence=[{"id": "cfo", "description": "CFO appointment",
                           "query": "CFO appointment"}], queryTemplates=[])
    resp = ws.post(sets(ws), body)
    assert resp.status_code == 201, resp.text
    assert int(resp.headers["X-Context-Position"]) > 0
    out = resp.json()
    assert list(out) == ["id", "name", "description", "status", "version", "collections",
                         "verifiedAnswers", "definitions", "instructions", "requiredEvidence",
                         "createdAt", "updatedAt"]
    assert out["status"] == "active" and out["version"] == 1
    assert out["verifiedAnswers"] == [CFO_ANSWER, {
        "id": "hq", "question": "Where is the head office?", "answer": "Zurich."}]
    assert out["definitions"][1] == {"term": "Churn", "definition": "Customers lost."}
    assert out["createdAt"] == out["updatedAt"] and out["createdAt"].endswith("Z")
    assert ws.get(f"{sets(ws)}/finance").json() == out  # read-your-writes
    assert ws.as_("user:vic").get(sets(ws)).json() == {"items": [out]}


def test_empty_parts_are_omitted(ws: Namespaced) -> None:
    out = create_set(ws, description="", collections=[])
    assert list(out) == ["id", "name", "status", "version", "collections", "createdAt",
                         "updatedAt"]
    assert out["collections"] == []


def test_list_holds_both_statuses_sorted_by_id(ws: Namespaced) -> None:
    for set_id in ("zeta", "alpha", "m-1", "m0"):
        create_set(ws, set_id)
    archive_set(ws, "m0")
    items = ws.get(sets(ws)).json()["items"]
    assert [(s["id"], s["status"]) for s in items] == [
        ("alpha", "active"), ("m-1", "active"), ("m0", "archived"), ("zeta", "active")]


def test_unknown_sets_are_not_found(ws: Namespaced) -> None:
    expect(ws.get(f"{sets(ws)}/nope"), 404, SET_NOT_FOUND)
    expect(ws.get(f"{sets(ws)}/a%00b"), 404, SET_NOT_FOUND)
    expect(ws.put(f"{sets(ws)}/nope", set_body("nope")), 404, SET_NOT_FOUND)
    expect(ws.delete(f"{sets(ws)}/nope"), 404, SET_NOT_FOUND)


def test_an_id_stays_taken_after_archiving(ws: Namespaced) -> None:
    create_set(ws)
    exists = {"error": "already_exists", "message": "context set already exists"}
    expect(ws.post(sets(ws), set_body()), 409, exists)
    archive_set(ws, "finance")
    expect(ws.post(sets(ws), set_body()), 409, exists)
    # validation comes before the existence check
    expect(ws.post(sets(ws), set_body(name="")), 400, bad(
        "context set name must be 1 to 100 characters"))


# --- validation (spec 6.3) ----------------------------------------------------------------------

def answers(n: int) -> list[dict[str, str]]:
    return [{"id": f"a{i}", "question": "q", "answer": "a"} for i in range(n)]


def answer(**fields: Any) -> list[dict[str, Any]]:
    return [{"id": "x", "question": "q", "answer": "a", **fields}]


def definitions(n: int) -> list[dict[str, str]]:
    return [{"term": f"term {i}", "definition": "d"} for i in range(n)]


def define(**fields: Any) -> list[dict[str, Any]]:
    return [{"term": "t", "definition": "d", **fields}]


def names(n: int, width: int = 1) -> list[str]:
    return [f"c{i:0{width}d}" for i in range(n)]


QA = ('verified answer "x" requires a question (at most 1000 characters) and an answer'
      " (at most 8000)")
DEF = 'definition "t" requires a term, a definition and valid aliases'
INSTR = 'instruction "i" requires a distinct id and a text of at most 4000 characters'
EVID = 'required evidence "e" requires a distinct id, a description and a query'
COLL = "context set collections must be distinct context names (at most 50)"
ANSWER_IDS = "verified answer ids must be distinct lowercase Kubernetes names"
TEMPLATES = "context set queryTemplates must be distinct (at most 50)"


def instruction(**fields: Any) -> list[dict[str, Any]]:
    return [{"id": "i", "text": "t", **fields}]


def evidence(**fields: Any) -> list[dict[str, Any]]:
    return [{"id": "e", "description": "d", "query": "q", **fields}]


ACCEPTED: list[dict[str, Any]] = [
    set_body("a" * 63), set_body(name="n" * 100), set_body(name="😀" * 100),
    set_body(description="d" * 2000), set_body(collections=names(50, 2)),
    set_body(collections=["c" * 50]), set_body(verifiedAnswers=answers(200)),
    set_body(verifiedAnswers=answer(question="q" * 1000, answer="a" * 8000,
                                    citations=[f"reports/r{i}" for i in range(20)])),
    set_body(definitions=definitions(500)),
    set_body(definitions=define(term="t" * 200, definition="d" * 4000,
                                aliases=[f"{i:03d}" + "x" * 197 for i in range(20)])),
    set_body(instructions=[{"id": f"i{i}", "text": "t" * 4000} for i in range(50)]),
    set_body(requiredEvidence=[{"id": f"e{i}", "description": "d" * 1000, "query": "q" * 1000}
                               for i in range(20)]),
    set_body(description=None, verifiedAnswers=None, definitions=None),  # null is absent
]


def test_versions_at_every_edge_are_accepted(ws: Namespaced) -> None:
    numbers = itertools.count()

    def probe(body: dict[str, Any]) -> None:
        n = next(numbers)
        body = {**body, "id": body["id"] if body["id"] != "finance" else f"s{n}"}
        resp = ws.post(sets(ws), body)
        assert resp.status_code == 201, resp.text
    each(ACCEPTED, probe)


REFUSED: list[tuple[dict[str, Any], str]] = [
    (set_body(id=...), "context set id must be a lowercase Kubernetes name"),
    (set_body(""), "context set id must be a lowercase Kubernetes name"),
    (set_body("a" * 64), "context set id must be a lowercase Kubernetes name"),
    (set_body("Finance"), "context set id must be a lowercase Kubernetes name"),
    (set_body("a.b"), "context set id must be a lowercase Kubernetes name"),
    (set_body(name=...), "context set name must be 1 to 100 characters"),
    (set_body(name=" "), "context set name must be 1 to 100 characters"),
    (set_body(name="n" * 101), "context set name must be 1 to 100 characters"),
    (set_body(name="😀" * 101), "context set name must be 1 to 100 characters"),
    (set_body(description="d" * 2001), "context set description must be at most 2000 characters"),
    (set_body(collections=...), COLL),
    (set_body(collections=None), COLL),
    (set_body(collections=names(51, 2)), COLL),
    (set_body(collections=["c" * 51]), COLL),
    (set_body(collections=["a", "a"]), COLL),
    (set_body(collections=["Bad"]), COLL),
    (set_body(verifiedAnswers=answers(201)), ANSWER_IDS),
    (set_body(verifiedAnswers=[*answers(2), {"id": "a1", "question": "q", "answer": "a"}]),
     ANSWER_IDS),
    (set_body(verifiedAnswers=answer(id=None)), ANSWER_IDS),
    (set_body(verifiedAnswers=answer(question=" ")), QA),
    (set_body(verifiedAnswers=answer(question="q" * 1001)), QA),
    (set_body(verifiedAnswers=answer(answer="a" * 8001)), QA),
    (set_body(verifiedAnswers=answer(answer=None)), QA),
    (set_body(verifiedAnswers=answer(citations=[f"reports/r{i}" for i in range(21)])),
     'verified answer "x" cites "reports/r20" outside the set\'s collections'),
    (set_body(verifiedAnswers=answer(citations=["other/r"])),
     'verified answer "x" cites "other/r" outside the set\'s collections'),
    (set_body(verifiedAnswers=answer(citations=["reports/"])),
     'verified answer "x" cites "reports/" outside the set\'s collections'),
    (set_body(definitions=definitions(501)),
     'definition "term 500" requires a term, a definition and valid aliases'),
    (set_body(definitions=define(term=" ")),
     'definition " " requires a term, a definition and valid aliases'),
    (set_body(definitions=define(term="t" * 201)),
     f'definition "{"t" * 64}\u2026" requires a term, a definition and valid aliases'),
    (set_body(definitions=define(definition="d" * 4001)), DEF),
    (set_body(definitions=define(definition=None)), DEF),
    (set_body(definitions=define(aliases=[f"x{i}" for i in range(21)])), DEF),
    (set_body(definitions=define(aliases=["a" * 201])), DEF),
    (set_body(definitions=define(aliases=[" "])), DEF),
    (set_body(definitions=[*define(aliases=["Annual-Revenue"]),
                           {"term": "annual revenue!", "definition": "d"}]),
     "definition terms and aliases must be distinct"),
    (set_body(instructions=[{"id": f"i{i}", "text": "t"} for i in range(51)]),
     'instruction "i50" requires a distinct id and a text of at most 4000 characters'),
    (set_body(instructions=[*instruction(), *instruction()]), INSTR),
    (set_body(instructions=instruction(text="t" * 4001)), INSTR),
    (set_body(instructions=instruction(text="")), INSTR),
    (set_body(instructions=[{"text": "t"}]),
     'instruction "" requires a distinct id and a text of at most 4000 characters'),
    (set_body(requiredEvidence=[{"id": f"e{i}", "description": "d", "query": "q"}
                                for i in range(21)]),
     'required evidence "e20" requires a distinct id, a description and a query'),
    (set_body(requiredEvidence=[*evidence(), *evidence()]), EVID),
    (set_body(requiredEvidence=evidence(description="d" * 1001)), EVID),
    (set_body(requiredEvidence=evidence(query="q" * 1001)), EVID),
    (set_body(requiredEvidence=evidence(query="!?")), EVID),
    (set_body(queryTemplates=names(51, 2)), TEMPLATES),
    (set_body(queryTemplates=["t", "t"]), TEMPLATES),
    # the domain check: no query template can exist yet, so every entry names none
    (set_body(queryTemplates=["revenue"]),
     'invalid context set: query template "revenue" not found'),
]


def test_every_rule_refuses_with_its_message(ws: Namespaced) -> None:
    def probe(case: tuple[dict[str, Any], str]) -> None:
        body, message = case
        expect(ws.post(sets(ws), body), 400, bad(message))
    each(REFUSED, probe)
    assert ws.get(sets(ws)).json() == {"items": []}  # nothing was recorded


def test_the_first_failing_rule_answers(ws: Namespaced) -> None:
    body = set_body("Bad", name="", collections=["a", "a"], queryTemplates=["x", "x"])
    expect(ws.post(sets(ws), body), 400, bad("context set id must be a lowercase Kubernetes name"))
    body = set_body(verifiedAnswers=[{"id": "x", "question": "q", "answer": "",
                                      "citations": ["nowhere/r"]}],
                    definitions=define(term=""))
    expect(ws.post(sets(ws), body), 400, bad(QA))


BODIES: list[bytes] = [b"[]", b"{", b'{"id":"a"} x', b'"text"', b'{"id":1}',
                       b'{"id":"a","name":"n","collections":"c"}',
                       b'{"id":"a","name":"n","collections":[1]}',
                       b'{"id":"a","name":"n","collections":[],"status":"active"}',
                       b'{"id":"a","name":"n","collections":[],"verifiedAnswers":[{"x":1}]}',
                       b'{"id":"a","name":"n","collections":[],"definitions":[{"aliases":"a"}]}',
                       b'{"id":"a","name":"n","collections":[],"version":2}',
                       b'{"ID":"a"}', '{"id":"\u00e9"'.encode()]


def test_malformed_bodies_are_refused_and_change_nothing(ws: Namespaced) -> None:
    def probe(raw: bytes) -> None:
        resp = ws.post(sets(ws), raw=raw)
        assert resp.status_code == 400, resp.text
        assert resp.json()["error"] == "invalid_request"
        assert resp.headers.get("X-Context-Position") is None
    each(BODIES, probe)
    expect(ws.post(sets(ws), raw=b""), 400, bad("request body is required"))
    expect(ws.post(sets(ws), raw=b" \n"), 400, bad("request body is required"))
    expect(ws.post(sets(ws), raw=b" " * (1024 * 1024 + 1)), 400, bad("request body too large"))
    resp = ws.post(sets(ws), raw=b'{"id":"a","name":"n","collections":[],"extra":1}')
    assert resp.json()["message"] == 'object contains unknown field "extra"'
    assert ws.get(sets(ws)).json() == {"items": []}


# --- replace ------------------------------------------------------------------------------------

def test_replace_order_of_checks(ws: Namespaced) -> None:
    create_set(ws)
    path = f"{sets(ws)}/finance"
    mismatch = bad("context set id must match the path")
    expect(ws.put(path, set_body("other", name="")), 400, mismatch)
    expect(ws.put(f"{sets(ws)}/nope", set_body("other")), 400, mismatch)
    expect(ws.put(f"{sets(ws)}/nope", set_body(id=..., name="")), 404, SET_NOT_FOUND)
    expect(ws.put(path, set_body(name="")), 400, bad(
        "context set name must be 1 to 100 characters"))
    malformed = ws.put(path, raw=b"{")
    assert (malformed.status_code, malformed.json()["error"]) == (400, "invalid_request")
    archive_set(ws, "finance")
    expect(ws.put(path, set_body(name="")), 409, ARCHIVED)
    expect(ws.put(path, set_body()), 409, ARCHIVED)


def test_replace_records_a_new_version_unless_the_content_is_identical(ws: Namespaced) -> None:
    created = create_set(ws, verifiedAnswers=[CFO_ANSWER])
    path = f"{sets(ws)}/finance"
    same = ws.put(path, set_body(id=..., verifiedAnswers=[CFO_ANSWER]))  # id may be omitted
    assert same.status_code == 200, same.text
    assert same.json() == created
    assert "X-Context-Position" not in same.headers
    changed = ws.put(path, set_body(collections=["reports", "company-facts"],
                                    verifiedAnswers=[CFO_ANSWER]))
    assert changed.status_code == 200, changed.text
    assert int(changed.headers["X-Context-Position"]) > 0
    out = changed.json()
    assert (out["version"], out["collections"], out["createdAt"]) == (
        2, ["reports", "company-facts"], created["createdAt"])
    assert out["updatedAt"] >= created["updatedAt"]
    assert ws.get(path).json() == out
    third = ws.put(path, set_body(verifiedAnswers=[]))  # dropping the answers is a change
    assert third.json()["version"] == 3 and "verifiedAnswers" not in third.json()


# --- archive ------------------------------------------------------------------------------------

def test_archive_is_final_and_repeatable(ws: Namespaced) -> None:
    create_set(ws)
    path = f"{sets(ws)}/finance"
    first = ws.delete(path)
    assert first.status_code == 204 and first.content == b""
    assert int(first.headers["X-Context-Position"]) > 0
    again = ws.delete(path)
    assert again.status_code == 204 and "X-Context-Position" not in again.headers
    out = ws.get(path).json()
    assert (out["status"], out["version"]) == ("archived", 1)
    assert out["updatedAt"] >= out["createdAt"]


# --- credentials bound to a set -----------------------------------------------------------------

def test_credentials_bind_only_to_active_sets_of_the_workspace(ws: Namespaced) -> None:
    body = {"name": "bound", "scopes": ["context:read"], "expiresInDays": 1}
    refused: Any = {"code": "VALIDATION_ERROR", "message": "request validation failed",
                    "details": [{"path": "$.contextSetId",
                                 "message": "must name an active context set"}]}
    expect(ws.post(credentials(ws), {**body, "contextSetId": "finance"}), 400, refused)
    create_set(ws)
    resp = ws.post(credentials(ws), {**body, "contextSetId": "finance"})
    assert resp.status_code == 201, resp.text
    assert resp.json()["contextSetId"] == "finance"
    archive_set(ws, "finance")
    expect(ws.post(credentials(ws), {**body, "contextSetId": "finance"}), 400, refused)
    ws.as_(ADMIN).post(f"/v1/namespaces/{fresh('other')}/context-sets", set_body("elsewhere"))
    expect(ws.post(credentials(ws), {**body, "contextSetId": "elsewhere"}), 400, refused)
