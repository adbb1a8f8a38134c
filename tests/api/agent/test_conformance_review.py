"""Rules of the agent API's workspaces, credentials, context sets, library routes and studied
fields (agent-context-api.md §3, §4, §6, §9, §10) that no other module pins: each test names the
rule it holds the service to, against the served application."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, SupportsIndex

import pytest

from context_service import bootstrap
from tests.api.agent.fields_support import LIST, QUERY, C, contracts
from tests.api.agent.packs_support import Agent, create_context, publish
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.conftest import Api, expect
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import archive_set, create_set, credentials, seed_workspace, token
from tests.support.api_helpers import ADMIN, add_member, fresh

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
AGENT = "/api/agent/v1"
REV1 = "1" * 64
NOT_FOUND_SET = {"code": "NOT_FOUND", "message": "context set not found"}


@pytest.fixture
def own(api: Api) -> Namespaced:
    """A workspace of the test's own with one member per role, ``user:alice`` the owner."""
    ws = namespaced(api, "acme")
    seed_workspace(ws)
    return ws


def validation(*details: tuple[str, str]) -> dict[str, Any]:
    return {"code": "VALIDATION_ERROR", "message": "request validation failed",
            "details": [{"path": p, "message": m} for p, m in details]}


def body(**fields: Any) -> dict[str, Any]:
    return {"name": "agent", "scopes": ["context:read"], "expiresInDays": 30, **fields}


# --- §4.2: the order of checks of create -----------------------------------------------------

def test_create_checks_the_body_and_the_set_before_the_limit(own: Namespaced) -> None:
    """Rules 4 and 6 (400) come before rule 7 (409): at the limit a bad body is still told
    what is wrong with it, not that the workspace is full."""
    alice = own.as_("user:alice")
    path = credentials(own)
    for i in range(50):
        assert alice.post(path, body(name=f"c{i}")).status_code == 201
    expect(alice.post(path, body(expiresInDays=0)), 400,
           validation(("$.expiresInDays", "must be between 1 and 365")))
    expect(alice.post(path, body(contextSetId="missing")), 400,
           validation(("$.contextSetId", "must name an active context set")))
    resp = alice.post(path, body())
    assert resp.status_code == 409 and resp.json()["code"] == "AGENT_CREDENTIAL_LIMIT_REACHED"


class CountingList(list[Any]):
    """A decoded array that counts the entries the route's checks touch."""

    touched = 0

    def __iter__(self) -> Iterator[Any]:
        for item in super().__iter__():
            CountingList.touched += 1
            yield item

    def __getitem__(self, index: SupportsIndex | slice) -> Any:  # type: ignore[override]
        found = super().__getitem__(index)
        CountingList.touched += len(found) if isinstance(index, slice) else 1
        return found

    def __contains__(self, item: object) -> bool:
        CountingList.touched += len(self)
        return super().__contains__(item)


def test_repeated_scopes_cost_one_look_each(own: Namespaced,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Every repeated scope is found (§1.4; the first 100 listed, the rest counted: decision
    0059), and finding them touches each entry a bounded number of times: a 1 MiB body of
    69,000 repeats took seconds of a request thread when each entry was compared with every
    earlier one."""
    from context_service.http.agent import credentials as route

    real = route.decode

    def counting(raw: Any, shape: Any) -> Any:
        found = real(raw, shape)
        if found.scopes is not None:
            found.scopes = CountingList(found.scopes)
        return found

    monkeypatch.setattr(route, "decode", counting)
    CountingList.touched = 0
    repeats = 20_000
    resp = own.as_("user:alice").post(credentials(own), body(scopes=["context:read"] * repeats))
    assert resp.status_code == 400, resp.text
    found = resp.json()["details"]
    assert len(found) == 101
    assert found[0] == {"path": "$.scopes[1]", "message": "is a duplicate"}
    assert found[99] == {"path": "$.scopes[100]", "message": "is a duplicate"}
    assert found[-1] == {"path": "$", "message": f"{repeats - 1 - 100} more violations not listed"}
    assert CountingList.touched <= 4 * repeats, CountingList.touched


def test_names_count_code_points_and_keep_any_character(own: Namespaced) -> None:
    """§1.4: lengths are code points of the string as sent; §4.1: ``name`` is as sent."""
    alice = own.as_("user:alice")
    path = credentials(own)
    for name in ("😀" * 100, "a\u0000b", " padded ", "e\u0301", "\u202eevil"):
        resp = alice.post(path, body(name=name))
        assert resp.status_code == 201, resp.text
        assert resp.json()["name"] == name
        read = alice.get(f"{path}/{resp.json()['id']}")
        assert read.status_code == 200 and read.json()["name"] == name
    expect(alice.post(path, body(name="😀" * 101)), 400,
           validation(("$.name", "must be 1 to 100 characters")))
    expect(alice.post(path, body(name="\u2003\u00a0\n")), 400,
           validation(("$.name", "must not be blank")))


def test_huge_and_negative_zero_integers_are_field_rule_failures(own: Namespaced) -> None:
    """§1.4 rule 5: a JSON integer, however large, is an integer; its range is a field rule."""
    alice = own.as_("user:alice")
    path = credentials(own)
    for raw in (b'{"name":"a","scopes":["context:read"],"expiresInDays":' + b"9" * 40 + b"}",
                b'{"name":"a","scopes":["context:read"],"expiresInDays":-0}',
                b'{"name":"a","scopes":["context:read"],"expiresInDays":-' + b"9" * 40 + b"}"):
        expect(alice.post(path, raw=raw), 400,
               validation(("$.expiresInDays", "must be between 1 and 365")))
    for raw in (b'{"name":"a","scopes":["context:read"],"expiresInDays":NaN}',
                b'{"name":"a","scopes":["context:read"],"expiresInDays":Infinity}',
                b'{"name":"a","scopes":["context:read"],"expiresInDays":1e400}',
                b'[' * 100_000 + b']' * 100_000):
        resp = alice.post(path, raw=raw)
        assert resp.status_code == 400 and resp.json()["code"] == "INVALID_REQUEST", resp.text


# --- §1.2: path segments ----------------------------------------------------------------------

def test_a_workspace_segment_is_percent_decoded(api: Api) -> None:
    """``{wsId}`` matches one segment, percent-decoded: ``a%2Fb`` is the workspace ``a/b``
    (no member, so the administrator alone sees it, empty)."""
    admin = api.as_(ADMIN)
    resp = admin.get("/api/w/a%2Fb/agent-credentials")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"items": []}
    ws = fresh("enc")
    created = admin.post(f"/api/w/{ws}/agent-credentials", body())
    assert created.status_code == 201, created.text
    ident = created.json()["id"]
    resp = admin.get(f"/api/w/{ws.replace('-', '%2D')}/agent-credentials/{ident}")
    assert resp.status_code == 200 and resp.json()["id"] == ident, resp.text
    expect(admin.get(f"/api/w/{ws}/agent-credentials/{ident}%2F"), 404,
           {"code": "NOT_FOUND", "message": "agent credential not found"})


# --- §3.4 rule 3 for the studied fields -------------------------------------------------------

def _fields_workspace(ws: Namespaced) -> None:
    create_context(ws, C, ws=ws.ns)
    publish(ws, C, REV1, contracts(), ws=ws.ns)
    create_context(ws, "other", ws=ws.ns)
    publish(ws, "other", REV1, [{**r, "context": "other"} for r in contracts()], ws=ws.ns)


def test_a_bound_credential_reads_fields_of_its_sets_collections_only(own: Namespaced) -> None:
    _fields_workspace(own)
    create_set(own, "narrow", collections=[C])
    bound = Agent(own, token(own, context_set_id="narrow"))
    unbound = Agent(own, token(own))
    other = {"code": "NOT_FOUND", "message": 'collection "other" not found'}
    for path, extra in ((LIST, {}), (QUERY, {"fields": ["region"]})):
        expect(bound.post(path, {"collectionId": "other", **extra}), 404, other)
        assert bound.post(path, {"collectionId": C, **extra}).status_code == 200
        assert unbound.post(path, {"collectionId": "other", **extra}).status_code == 200
    # archiving never widens a bound credential: the last version's collections stay its limit
    archive_set(own, "narrow")
    expect(bound.post(LIST, {"collectionId": "other"}), 404, other)
    assert bound.post(LIST, {"collectionId": C}).status_code == 200


# --- §9: library ------------------------------------------------------------------------------

def test_lookup_ties_order_by_normalised_term_before_the_set(own: Namespaced) -> None:
    """§9.2: equal word scores order by the term's normalised text, then ``contextSetId``."""
    create_set(own, "aaa", name="A", definitions=[
        {"term": "Zeta growth", "definition": "z"}])
    create_set(own, "bbb", name="B", definitions=[
        {"term": "alpha growth", "definition": "a"}, {"term": "Beta growth", "definition": "b"}])
    agent = Agent(own, token(own))
    resp = agent.post(f"{AGENT}/definitions/lookup", {"term": "growth"})
    assert resp.status_code == 200, resp.text
    assert [(i["contextSetId"], i["term"], i["score"]) for i in resp.json()["items"]] == [
        ("bbb", "alpha growth", 0.666667), ("bbb", "Beta growth", 0.666667),
        ("aaa", "Zeta growth", 0.666667)]


def test_scores_round_half_to_even(own: Namespaced) -> None:
    """§1.8: 2/256 = 0.0078125 is written 0.007812 (ties to even), 6/256 as 0.023438."""
    words = [f"w{i}" for i in range(400)]
    one = " ".join(words[:128])  # 128 distinct words
    create_set(own, "ties", name="Ties", verifiedAnswers=[
        {"id": "one", "question": one, "answer": "a"}])
    agent = Agent(own, token(own))
    question = " ".join([words[0], *words[200:327]])  # 128 words, w0 shared
    resp = agent.post(f"{AGENT}/verified-answers/match", {"question": question})
    assert resp.status_code == 200, resp.text
    assert '"score":0.007812}' in resp.text, resp.text
    question = " ".join([*words[:3], *words[200:325]])  # 128 words, three shared
    resp = agent.post(f"{AGENT}/verified-answers/match", {"question": question})
    assert '"score":0.023438}' in resp.text, resp.text


def test_list_query_of_stop_words_only_still_matches(own: Namespaced) -> None:
    """§9.2: a word set of only stop words is its distinct tokens."""
    create_set(own, "them", name="The", description="")
    create_set(own, "rest", name="Revenue", description="figures")
    agent = Agent(own, token(own))
    resp = agent.post(f"{AGENT}/context-sets/list", {"query": "the"})
    assert resp.status_code == 200, resp.text
    assert [(i["id"], i["score"]) for i in resp.json()["items"]] == [("them", 1)]


def test_get_of_a_bound_credential_names_no_other_set(own: Namespaced) -> None:
    create_set(own, "mine", name="Mine")
    create_set(own, "theirs", name="Theirs")
    bound = Agent(own, token(own, context_set_id="mine"))
    expect(bound.post(f"{AGENT}/context-sets/get", {"contextSetId": "theirs"}), 404,
           NOT_FOUND_SET)
    got = bound.post(f"{AGENT}/context-sets/get", {})
    assert got.status_code == 200 and got.json()["id"] == "mine"


# --- §1.4: bodies -------------------------------------------------------------------------------

CONTENT_TYPES = ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                 "application/xml", "")


def test_the_content_type_is_not_checked(own: Namespaced) -> None:
    path = credentials(own)
    raw = b'{"name":"a","scopes":["context:read"],"expiresInDays":1}'
    agent = Agent(own, token(own))
    create_set(own, "finance")
    for content_type in CONTENT_TYPES:
        resp = own.as_("user:alice").post(path, raw=raw, headers={"Content-Type": content_type})
        assert resp.status_code == 201, (content_type, resp.text)
        resp = agent.post(f"{AGENT}/context-sets/get", raw=b'{"contextSetId":"finance"}',
                          headers={"Content-Type": content_type})
        assert resp.status_code == 200, (content_type, resp.text)


def test_get_and_delete_under_api_w_ignore_any_body(own: Namespaced) -> None:
    path = credentials(own)
    alice = own.as_("user:alice")
    ident = alice.post(path, body()).json()["id"]
    for raw in (b"nonsense", b"{", b" " * (1024 * 1024 + 1)):
        resp = alice.get(path, raw=raw)
        assert resp.status_code == 200, resp.text
        resp = alice.get(f"{path}/{ident}", raw=raw)
        assert resp.status_code == 200, resp.text
    resp = alice.delete(f"{path}/{ident}", raw=b" " * (1024 * 1024 + 1))
    assert resp.status_code == 204, resp.text
    assert alice.get(f"{path}/{ident}").json()["status"] == "revoked"


# --- §1.5: the subject header is not the caller on agent routes ------------------------------

def test_a_malformed_subject_header_is_ignored_on_agent_routes(own: Namespaced) -> None:
    create_set(own, "finance")
    agent = Agent(own, token(own))
    for subject in ("nonsense", "robot:x", "user:", " ", "user:%00"):
        resp = agent.post(f"{AGENT}/context-sets/list", {},
                          headers={"X-Context-Subject": subject})
        assert resp.status_code == 200, (subject, resp.text)
        assert [i["id"] for i in resp.json()["items"]] == ["finance"]


# --- §3.4: a credential reads its own workspace only ------------------------------------------

def test_a_collection_of_the_same_name_in_another_workspace_is_not_found(api: Api) -> None:
    mine, theirs = namespaced(api, "mine"), namespaced(api, "theirs")
    seed_workspace(mine)
    seed_workspace(theirs)
    _fields_workspace(theirs)
    agent = Agent(mine, token(mine))
    missing = {"code": "NOT_FOUND", "message": f'collection "{C}" not found'}
    expect(agent.post(LIST, {"collectionId": C}), 404, missing)
    expect(agent.post(QUERY, {"collectionId": C, "fields": ["region"]}), 404, missing)
    create_set(theirs, "finance")
    expect(agent.post(f"{AGENT}/context-sets/get", {"contextSetId": "finance"}), 404,
           NOT_FOUND_SET)
    assert agent.post(f"{AGENT}/context-sets/list", {}).json() == {"items": []}


# --- §1.2: routing ------------------------------------------------------------------------------

def test_other_methods_on_a_credential_path_are_not_allowed(own: Namespaced) -> None:
    path = credentials(own)
    alice = own.as_("user:alice")
    ident = alice.post(path, body()).json()["id"]
    for method in ("PUT", "POST", "PATCH", "HEAD", "OPTIONS"):
        resp = alice.request(method, f"{path}/{ident}")
        assert resp.status_code == 405, (method, resp.status_code, resp.text)
        assert set(resp.headers["Allow"].split(", ")) == {"DELETE", "GET"}, resp.headers
        if method != "HEAD":
            assert resp.json() == {"code": "METHOD_NOT_ALLOWED", "message": "method not allowed"}
        assert resp.headers["Cache-Control"] == "no-store"
    for method in ("HEAD", "DELETE", "PATCH"):
        resp = alice.request(method, path)
        assert resp.status_code == 405, (method, resp.text)
        assert set(resp.headers["Allow"].split(", ")) == {"GET", "POST"}
    resp = alice.request("HEAD", f"{AGENT}/context-sets/list")
    assert resp.status_code == 405 and resp.headers["Allow"] == "POST"


# --- §3.3: the member a DELETE names ------------------------------------------------------------

def test_a_segment_that_is_not_utf8_names_no_member(own: Namespaced) -> None:
    """The segment is percent-decoded: bytes that are no UTF-8 name no subject, so they never
    stand for the member whose name holds U+FFFD in their place."""
    members = f"/v1/namespaces/{own.ns}/members"
    alice = own.as_("user:alice")
    resp = alice.put(members, {"subject": {"kind": "user", "name": "bob\ufffd"},
                               "role": "viewer"})
    assert resp.status_code == 200, resp.text
    for segment in ("user:bob%FF", "user:bob%C3", "user:bob%ED%A0%80"):
        expect(alice.delete(f"{members}/{segment}"), 400,
               {"error": "invalid_request", "message": "valid subject is required"})
    listed = alice.get(members).json()["items"]
    assert {"kind": "user", "name": "bob\ufffd"} in [m["subject"] for m in listed]
    assert alice.delete(f"{members}/user:bob%EF%BF%BD").status_code == 204


def test_odd_set_ids_and_workspaces_never_fail(own: Namespaced, api: Api) -> None:
    path = credentials(own)
    alice = own.as_("user:alice")
    for set_id in ("\u0000", "a/b", "A", "x" * 300, "\ud7ff", "finance\n"):
        expect(alice.post(path, body(contextSetId=set_id)), 400,
               validation(("$.contextSetId", "must name an active context set")))
    admin = api.as_(ADMIN)
    for odd in ("%00", "%F0%9F%98%80", "x" * 300, "%20"):
        ws = fresh("odd") + odd  # a workspace of this test's own
        resp = admin.post(f"/api/w/{ws}/agent-credentials", body())
        assert resp.status_code == 201, (ws, resp.text)
        listed = admin.get(f"/api/w/{ws}/agent-credentials")
        assert [i["id"] for i in listed.json()["items"]] == [resp.json()["id"]], ws
        agent = Agent(api, resp.json()["token"])
        assert agent.post(f"{AGENT}/context-sets/list", {}).json() == {"items": []}
        assert agent.post(LIST, {"collectionId": "c"}).status_code == 404


def test_paths_match_exactly(own: Namespaced) -> None:
    """§1.2: paths match exactly; anything else under /api/ is the /api/ 404."""
    create_set(own, "finance")
    agent = Agent(own, token(own))
    route_not_found = {"code": "NOT_FOUND", "message": "route not found"}
    for path in (f"{AGENT}/context-sets/list/",
                 f"{AGENT}/context-sets/LIST", f"{AGENT}/context-sets/list/extra",
                 "/api/agent/v2/context-sets/list", f"{AGENT}/fields/list/",
                 f"{credentials(own)}/", f"/api/w/{own.ns}/agent-credentials/a/b",
                 f"/api/w/{own.ns}", "/api/w/", "/api/"):
        expect(agent.post(path, {}), 404, route_not_found)


# --- §3.3: the last owner stays, whoever races for it ------------------------------------------

def test_two_owners_demoting_each_other_at_once_leave_one_owner(api: Api) -> None:
    """Rule 7 holds under concurrency: the workspace is one aggregate, so of two owners
    demoting (or removing) each other at the same moment exactly one succeeds."""
    def race(ws: Namespaced, remove: bool) -> list[int]:
        members = f"/v1/namespaces/{ws.ns}/members"

        def demote(pair: tuple[str, str]) -> int:
            caller, subject = pair
            if remove:
                return int(ws.as_(caller).delete(f"{members}/{subject}").status_code)
            kind, _, name = subject.partition(":")
            return int(ws.as_(caller).put(members, {"subject": {"kind": kind, "name": name},
                                                    "role": "admin"}).status_code)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            codes = sorted(pool.map(demote, [("user:alice", "user:bob"),
                                             ("user:bob", "user:alice")]))
        owners = [m for m in ws.as_(ADMIN).get(members).json()["items"] if m["role"] == "owner"]
        assert len(owners) == 1, (codes, owners)
        return codes

    for round_ in range(6):
        ws = namespaced(api, "race")
        seed_workspace(ws)
        add_member(ws, "user:bob", "owner", caller="user:alice", ws=ws.ns)
        codes = race(ws, remove=round_ % 2 == 1)
        # the loser is refused: as an owner (409), or already demoted (400) or removed (404)
        assert codes[0] in (200, 204) and codes[1] in (400, 404, 409), codes


# --- §4.1, §4.3: status evaluated now; revoking an expired credential -------------------------

def test_an_expired_credential_is_revoked_and_then_reads_revoked(
        own: Namespaced, container: bootstrap.Container) -> None:
    path = credentials(own)
    alice = own.as_("user:alice")
    created = alice.post(path, body(expiresInDays=1)).json()
    agent = own.client.app.state.services.agent
    real = agent.clock
    later = lambda: real() + timedelta(days=2)  # noqa: E731
    agent.clock = container.credentials.clock = later
    try:
        assert alice.get(f"{path}/{created['id']}").json()["status"] == "expired"
        revoked = alice.delete(f"{path}/{created['id']}")
        assert revoked.status_code == 204 and "X-Context-Position" in revoked.headers
        read = alice.get(f"{path}/{created['id']}").json()
        assert read["status"] == "revoked" and read["revokedBy"] == "user:alice"
        assert list(read)[-3:] == ["status", "revokedAt", "revokedBy"]
        again = alice.delete(f"{path}/{created['id']}")
        assert again.status_code == 204 and "X-Context-Position" not in again.headers
        expect(Agent(own, created["token"]).post(f"{AGENT}/context-sets/list", {}), 401,
               {"code": "UNAUTHORIZED", "message": "agent credential is not valid"})
    finally:
        agent.clock = container.credentials.clock = real
