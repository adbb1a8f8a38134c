"""The library routes over HTTP (agent-context-api.md §9, §3.5): the pipeline before the body,
every field rule at and beyond its edge with its ``details``, the three match orders, bound and
unbound credentials, archived bound sets, and the spec's worked example byte for byte."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.conftest import Api, each
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import archive_set, create_set, seed_workspace, sets, token
from tests.api.sets_support import CFO_ANSWER, set_body

# one service for the module: every test's library is a workspace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
AGENT = "/api/agent/v1"
LIST, GET, LOOKUP, MATCH = (f"{AGENT}/context-sets/list", f"{AGENT}/context-sets/get",
                            f"{AGENT}/definitions/lookup", f"{AGENT}/verified-answers/match")
SET_NOT_FOUND = {"code": "NOT_FOUND", "message": "context set not found"}
ARR = {"term": "ARR", "definition": "Annual recurring revenue.",
       "aliases": ["annual recurring revenue"]}


class Agent:
    """Calls the agent API with one bearer credential."""

    def __init__(self, api: Api, value: str) -> None:
        self.api = api.as_(None)
        self.token = value

    def post(self, path: str, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> Any:
        return self.api.post(path, body, raw=raw,
                             headers={"Authorization": f"Bearer {self.token}", **(headers or {})})

    def ok(self, path: str, body: Any) -> Any:
        resp = self.post(path, body)
        assert resp.status_code == 200, resp.text
        assert resp.headers["Cache-Control"] == "no-store"
        return resp.json()


class Library:
    def __init__(self, api: Namespaced) -> None:
        self.api = api
        seed_workspace(api)
        create_set(api, "finance", description="Revenue and CFO answers",
                   verifiedAnswers=[CFO_ANSWER, {"id": "hq", "answer": "Zurich.",
                                                 "question": "Where is the head office?"}],
                   definitions=[ARR, {"term": "Revenue", "definition": "Income from sales."}],
                   instructions=[{"id": "cite", "text": "Cite every figure."}],
                   requiredEvidence=[{"id": "cfo", "description": "CFO appointment",
                                      "query": "CFO appointment"}])
        create_set(api, "board", name="Board", description="CFO reports", collections=["minutes"],
                   verifiedAnswers=[{"id": "cfo", "question": "who is the CFO",
                                     "answer": "See the minutes."}],
                   definitions=[{"term": "Annual recurring revenue", "definition": "ARR."}])
        create_set(api, "old", name="Old CFO facts",
                   verifiedAnswers=[{**CFO_ANSWER, "citations": []}],
                   definitions=[{"term": "Revenue", "definition": "Old."}])
        self.unbound = Agent(api, token(api))
        self.finance = Agent(api, token(api, context_set_id="finance"))
        self.old = Agent(api, token(api, context_set_id="old"))
        self.runner = Agent(api, token(api, scopes=("queries:run",)))
        archive_set(api, "old")


@pytest.fixture
def lib(api: Api) -> Library:
    return Library(namespaced(api, "acme"))


def validation(*details: tuple[str, str]) -> dict[str, Any]:
    return {"code": "VALIDATION_ERROR", "message": "request validation failed",
            "details": [{"path": p, "message": m} for p, m in details]}


def expect(resp: Any, status: int, body: dict[str, Any]) -> None:
    assert resp.status_code == status, resp.text
    assert resp.json() == body
    assert resp.headers["Cache-Control"] == "no-store"


# --- the spec's example -----------------------------------------------------------------------

def test_worked_example_is_answered_byte_for_byte(lib: Library) -> None:
    question = {"question": "Who is the current CFO, and since when?"}
    resp = lib.finance.post(MATCH, question)
    assert resp.status_code == 200, resp.text
    assert resp.text == (
        '{"items":[{"contextSetId":"finance","id":"current-cfo","question":"Who is our CFO?",'
        '"answer":"Priya Raman has been CFO since 1 July 2024.",'
        '"citations":["company-facts/cfo-2024"],"match":"words","score":0.571429}]}')
    # unbound: every active set; equal scores order by set id; the archived set never appears
    items = lib.unbound.ok(MATCH, question)["items"]
    assert [(i["contextSetId"], i["id"], i["score"]) for i in items] == [
        ("board", "cfo", 0.571429), ("finance", "current-cfo", 0.571429)]
    assert "citations" not in items[0]


# --- the pipeline comes before the body -------------------------------------------------------

@pytest.mark.parametrize("path", [LIST, GET, LOOKUP, MATCH])
def test_the_pipeline_answers_before_the_body(lib: Library, path: str) -> None:
    anonymous = lib.api.as_(None)
    expect(anonymous.post(path, raw=b"{"), 401,
           {"code": "UNAUTHORIZED", "message": "agent credential is required"})
    expect(lib.unbound.post(path, raw=b"{", headers={"Origin": "null"}), 403, {
        "code": "AGENT_BROWSER_REQUEST_REFUSED",
        "message": "browser requests are refused; call the agent API from a server-side client"})
    expect(lib.runner.post(path, raw=b"{"), 403,
           {"code": "FORBIDDEN", "message": 'agent credential lacks scope "context:read"'})
    resp = lib.unbound.post(path, raw=b"{")
    assert (resp.status_code, resp.json()["code"]) == (400, "INVALID_REQUEST")
    resp = lib.unbound.api.get(path, headers={"Authorization": f"Bearer {lib.unbound.token}"})
    assert (resp.status_code, resp.json()["code"], resp.headers["Allow"]) == (
        405, "METHOD_NOT_ALLOWED", "POST")


# --- body decoding and field rules ------------------------------------------------------------

DECODING: list[tuple[str, bytes]] = [
    (LIST, b""), (LIST, b"  "), (LIST, b"[]"), (LIST, b'{"limit":"3"}'), (LIST, b'{"limit":3.0}'),
    (LIST, b'{"query":1}'), (LIST, b'{"Query":"x"}'), (LIST, b'{} {}'),
    (GET, b'{"contextSetId":1}'), (GET, b'{"id":"finance"}'),
    (LOOKUP, b'{"term":["x"]}'), (LOOKUP, b'{"term":"x","limit":true}'),
    (MATCH, b'{"question":"x","extra":null}'), (MATCH, b'{"question":null,"contextSetId":{}}'),
]


def test_undecodable_bodies_are_invalid_requests(lib: Library) -> None:
    def probe(case: tuple[str, bytes]) -> None:
        path, raw = case
        resp = lib.unbound.post(path, raw=raw)
        assert resp.status_code == 400, resp.text
        assert resp.json()["code"] == "INVALID_REQUEST"
    each(DECODING, probe)
    expect(lib.unbound.post(LIST, raw=b""), 400,
           {"code": "INVALID_REQUEST", "message": "request body is required"})
    expect(lib.unbound.post(MATCH, raw=b" " * (1024 * 1024 + 1)), 400,
           {"code": "INVALID_REQUEST", "message": "request body too large"})


RULES: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (LIST, {"query": "q" * 201}, [("$.query", "must be at most 200 characters")]),
    (LIST, {"limit": 0}, [("$.limit", "must be between 1 and 100")]),
    (LIST, {"limit": 101}, [("$.limit", "must be between 1 and 100")]),
    (LIST, {"query": "é" * 201, "limit": -1}, [("$.query", "must be at most 200 characters"),
                                               ("$.limit", "must be between 1 and 100")]),
    (GET, {"contextSetId": ""}, [("$.contextSetId", "must not be empty")]),
    (GET, {}, [("$.contextSetId", "is required for a credential not bound to a context set")]),
    (GET, {"contextSetId": None},
     [("$.contextSetId", "is required for a credential not bound to a context set")]),
    (LOOKUP, {}, [("$.term", "is required")]),
    (LOOKUP, {"term": None}, [("$.term", "is required")]),
    (LOOKUP, {"term": " \t"}, [("$.term", "must not be blank")]),
    (LOOKUP, {"term": "t" * 201}, [("$.term", "must be 1 to 200 characters")]),
    (LOOKUP, {"term": "x", "limit": 51}, [("$.limit", "must be between 1 and 50")]),
    (LOOKUP, {"term": "", "contextSetId": "", "limit": 0},
     [("$.term", "must not be blank"), ("$.contextSetId", "must not be empty"),
      ("$.limit", "must be between 1 and 50")]),
    (MATCH, {"contextSetId": "finance"}, [("$.question", "is required")]),
    (MATCH, {"question": ""}, [("$.question", "must not be blank")]),
    (MATCH, {"question": "q" * 4001}, [("$.question", "must be 1 to 4000 characters")]),
    (MATCH, {"question": "q", "limit": 0}, [("$.limit", "must be between 1 and 50")]),
    (MATCH, {"question": "q", "contextSetId": "", "limit": 51},
     [("$.contextSetId", "must not be empty"), ("$.limit", "must be between 1 and 50")]),
]


def test_field_rules_list_every_violation(lib: Library) -> None:
    def probe(case: tuple[str, dict[str, Any], list[tuple[str, str]]]) -> None:
        path, body, details = case
        expect(lib.unbound.post(path, body), 400, validation(*details))
    each(RULES, probe)


EDGES: list[tuple[str, dict[str, Any]]] = [
    (LIST, {}), (LIST, {"query": "q" * 200}), (LIST, {"limit": 1}), (LIST, {"limit": 100}),
    (LIST, {"query": None, "limit": None}),
    (LOOKUP, {"term": "t" * 200}), (LOOKUP, {"term": "😀" * 200, "limit": 1}),
    (LOOKUP, {"term": "x", "limit": 50}),
    (MATCH, {"question": "q" * 4000}), (MATCH, {"question": "q", "limit": 1}),
    (MATCH, {"question": "q", "limit": 50}),
]


def test_values_at_the_edges_are_accepted(lib: Library) -> None:
    each(EDGES, lambda case: lib.unbound.ok(*case))


# --- context-sets/list ------------------------------------------------------------------------

def test_list_without_a_query_is_every_visible_set_by_id(lib: Library) -> None:
    items = lib.unbound.ok(LIST, {})["items"]
    assert items == [
        {"id": "board", "name": "Board", "description": "CFO reports", "version": 1,
         "collections": ["minutes"]},
        {"id": "finance", "name": "Finance", "description": "Revenue and CFO answers",
         "version": 1, "collections": ["company-facts", "reports"]}]
    assert lib.unbound.ok(LIST, {"query": "  "})["items"] == items  # blank: no query
    assert lib.unbound.ok(LIST, {"limit": 1})["items"] == items[:1]
    assert lib.finance.ok(LIST, {})["items"] == items[1:]
    assert lib.old.ok(LIST, {})["items"] == []  # its set is archived: none visible
    assert lib.old.ok(LIST, {"query": "CFO"})["items"] == []


def test_list_with_a_query_ranks_by_score_then_id(lib: Library) -> None:
    resp = lib.unbound.post(LIST, {"query": "Who is the CFO?"})
    assert resp.text == (
        '{"items":[{"id":"board","name":"Board","description":"CFO reports","version":1,'
        '"collections":["minutes"],"score":0.4},{"id":"finance","name":"Finance",'
        '"description":"Revenue and CFO answers","version":1,'
        '"collections":["company-facts","reports"],"score":0.333333}]}')
    assert lib.unbound.ok(LIST, {"query": "Who is the CFO?", "limit": 1})["items"][0]["id"] == (
        "board")
    assert lib.unbound.ok(LIST, {"query": "nothing matches"})["items"] == []
    assert [i["id"] for i in lib.finance.ok(LIST, {"query": "CFO"})["items"]] == ["finance"]


# --- context-sets/get -------------------------------------------------------------------------

def test_get_answers_the_agent_view(lib: Library) -> None:
    view = lib.unbound.ok(GET, {"contextSetId": "finance"})
    assert list(view) == ["id", "name", "description", "version", "updatedAt", "collections",
                          "verifiedAnswers", "definitions", "instructions", "requiredEvidence"]
    assert view["verifiedAnswers"][0] == CFO_ANSWER
    assert view["definitions"] == [ARR, {"term": "Revenue", "definition": "Income from sales."}]
    assert view["requiredEvidence"] == [{"id": "cfo", "description": "CFO appointment",
                                         "query": "CFO appointment"}]
    assert lib.finance.ok(GET, {}) == view
    assert lib.finance.ok(GET, {"contextSetId": "finance"}) == view
    admin_view = lib.api.as_("user:vic").get(f"{sets(lib.api)}/finance").json()
    assert view["updatedAt"] == admin_view["updatedAt"]


def test_get_scope_rules(lib: Library) -> None:
    for agent, body in ((lib.unbound, {"contextSetId": "old"}),
                        (lib.unbound, {"contextSetId": "nope"}),
                        (lib.unbound, {"contextSetId": "a\x00"}),
                        (lib.finance, {"contextSetId": "board"}),
                        (lib.finance, {"contextSetId": "old"}),
                        (lib.old, {}), (lib.old, {"contextSetId": "old"})):
        expect(agent.post(GET, body), 404, SET_NOT_FOUND)
    # a bound credential still gets the body rules first
    expect(lib.finance.post(GET, {"contextSetId": ""}), 400,
           validation(("$.contextSetId", "must not be empty")))


def test_reads_see_the_writes_made_before_them(lib: Library) -> None:
    admin = lib.api.as_("user:alice")
    resp = admin.put(f"{sets(lib.api)}/board",
                     set_body("board", name="Board", collections=["minutes"]))
    assert resp.status_code == 200, resp.text
    view = lib.unbound.ok(GET, {"contextSetId": "board"})
    assert view["version"] == 2 and "verifiedAnswers" not in view
    assert lib.unbound.ok(MATCH, {"question": "who is the CFO"})["items"][0]["contextSetId"] == (
        "finance")
    archive_set(lib.api, "finance")
    expect(lib.finance.post(GET, {}), 404, SET_NOT_FOUND)
    assert lib.finance.ok(LIST, {})["items"] == []
    created = create_set(lib.api, "fresh", name="Fresh")
    assert lib.unbound.ok(GET, {"contextSetId": "fresh"})["updatedAt"] == created["updatedAt"]


# --- definitions/lookup -----------------------------------------------------------------------

def test_lookup_orders_exact_term_exact_alias_then_words(lib: Library) -> None:
    resp = lib.unbound.post(LOOKUP, {"term": "Annual-Recurring REVENUE"})
    # scores are plain decimals, integral ones as integers
    assert resp.text.count('"score":1}') == 2 and '"score":0.5}' in resp.text, resp.text
    items = resp.json()["items"]
    assert items == [
        {"contextSetId": "board", "term": "Annual recurring revenue", "definition": "ARR.",
         "match": "exact_term", "score": 1},
        {"contextSetId": "finance", **ARR, "match": "exact_alias", "score": 1},
        {"contextSetId": "finance", "term": "Revenue", "definition": "Income from sales.",
         "match": "words", "score": 0.5}]
    assert list(items[1]) == ["contextSetId", "term", "definition", "aliases", "match", "score"]
    assert lib.unbound.ok(LOOKUP, {"term": "Annual-Recurring REVENUE", "limit": 2})["items"] == (
        items[:2])
    assert lib.finance.ok(LOOKUP, {"term": "annual recurring revenue"})["items"] == items[1:]
    assert lib.unbound.ok(LOOKUP, {"term": "arr", "contextSetId": "finance"})["items"] == [
        {"contextSetId": "finance", **ARR, "match": "exact_term", "score": 1}]
    assert lib.unbound.ok(LOOKUP, {"term": "?!"})["items"] == []
    assert lib.unbound.ok(LOOKUP, {"term": "the"})["items"] == []


def test_lookup_and_match_scope_rules(lib: Library) -> None:
    for path, body in ((LOOKUP, {"term": "revenue"}), (MATCH, {"question": "who is our CFO"})):
        for agent, set_id in ((lib.unbound, "old"), (lib.unbound, "nope"),
                              (lib.finance, "board"), (lib.finance, "old"), (lib.old, "old")):
            expect(agent.post(path, {**body, "contextSetId": set_id}), 404, SET_NOT_FOUND)
        expect(lib.old.post(path, body), 404, SET_NOT_FOUND)  # its set is archived
        assert lib.finance.ok(path, {**body, "contextSetId": "finance"})["items"]


# --- verified-answers/match -------------------------------------------------------------------

def test_match_puts_exact_questions_first_and_cuts_at_the_limit(lib: Library) -> None:
    questions = ["Who is our CFO", "Who is the CFO of the group", "CFO", "Who was CFO before",
                 "CFO since when", "current CFO", "Our CFO?"]
    create_set(lib.api, "many", name="Many", collections=[], verifiedAnswers=[
        {"id": f"q{i}", "question": q, "answer": "a"} for i, q in enumerate(questions)])
    items = lib.unbound.ok(MATCH, {"question": "who is our cfo?", "contextSetId": "many"})["items"]
    assert [(i["id"], i["match"], i["score"]) for i in items] == [
        ("q0", "exact", 1), ("q1", "words", 0.8), ("q3", "words", 0.8),
        ("q2", "words", 0.666667), ("q6", "words", 0.666667)]
    everything = lib.unbound.ok(MATCH, {"question": "who is our cfo?", "limit": 50})["items"]
    assert [(i["contextSetId"], i["id"]) for i in everything[:3]] == [
        ("finance", "current-cfo"), ("many", "q0"), ("board", "cfo")]
    assert len(everything) == 2 + len(questions)
    assert lib.unbound.ok(MATCH, {"question": "unrelated words"})["items"] == []


# --- the OpenAPI document ---------------------------------------------------------------------

def test_routes_are_documented_with_their_constraints(api: Api) -> None:
    doc = api.get("/schema/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for path in (LIST, GET, LOOKUP, MATCH):
        op = doc["paths"][path]["post"]
        assert op["security"] == [{"agentCredential": []}]
        assert op["responses"]["default"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ApiError"}
    assert doc["components"]["securitySchemes"]["agentCredential"]["scheme"] == "bearer"
    assert schemas["ApiError"]["required"] == ["code", "message"]
    def resolved(schema: Any) -> Any:  # a body or a property given by reference
        while "$ref" in schema:
            schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
        return schema

    def body(path: str) -> Any:
        schema = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"][
            "schema"]
        return {key: resolved(value) for key, value in resolved(schema)["properties"].items()}

    term = body(LOOKUP)["term"]
    assert (term["minLength"], term["maxLength"]) == (1, 200)
    limit = body(LIST)["limit"]
    assert (limit["minimum"], limit["maximum"], limit["default"]) == (1, 100, 20)
    assert body(MATCH)["question"]["maxLength"] == 4000
    sets_body = body("/v1/namespaces/{namespace}/context-sets")
    assert sets_body["id"]["maxLength"] == 63
    assert sets_body["collections"]["maxItems"] == 50
    assert sets_body["verifiedAnswers"]["maxItems"] == 200
    answer = resolved(sets_body["verifiedAnswers"]["items"])["properties"]["answer"]
    assert answer["maxLength"] == 8000
    sets = doc["paths"]["/v1/namespaces/{namespace}/context-sets/{id}"]
    assert set(sets) == {"get", "put", "delete"}
    assert sets["put"]["responses"]["default"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"}
