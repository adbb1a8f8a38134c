"""Subjects have no length limit (spec 2.1.6: a kind and a non-blank name): the read model keys
them in the grants, the workspace members and collection admission's own record of members. A
btree entry cannot exceed about 2,700 bytes, so a long subject under such a key made the
projection writing it fail and retry for ever, and every view it feeds stalled for the whole
service. Each case grants to, or adds as a member, subjects of 3,000 random characters (ASCII
and multi-byte) and checks that the views still answer: the long subject is listed and acts as
itself (never as a subject sharing all but its last character), and the others are still
served."""

from __future__ import annotations

import random
import string
from urllib.parse import quote

import pytest

from tests.api.agent.fields_support import LIST, REV1, C, contracts
from tests.api.agent.packs_support import Agent, create_context, publish
from tests.api.conftest import Api
from tests.api.namespaced import Namespaced, namespaced
from tests.api.sets_namespaced import token

# one service for the module: every test works in a namespace of its own (``api.ns``)
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
ADMIN = "service:context-service-admin"


def _word(length: int, seed: int, alphabet: str) -> str:
    """``length`` characters that do not compress (PostgreSQL compresses a long index entry,
    so a repetitive value would fit where a long subject does not)."""
    rnd = random.Random(seed)
    return "".join(rnd.choice(alphabet) for _ in range(length))


LONG_ASCII = _word(3000, 11, string.ascii_letters + string.digits + "/-_.:")  # 3,000 bytes
LONG_MULTIBYTE = _word(1500, 12, "αβγδεζηθικλμνξοπρστυφχψωабвгдежзий中文字")  # ~3,100 bytes
LONG_USER = "user:" + LONG_ASCII  # sent as X-Context-Subject too (a header is ASCII)
NEAR_USER = "user:" + LONG_ASCII[:-1]  # the same but for the last character
LONG_AGENT = "agent:" + LONG_MULTIBYTE


def _subject(subject: str) -> dict[str, str]:
    kind, _, name = subject.partition(":")
    return {"kind": kind, "name": name}


def _key(item: dict[str, dict[str, str]]) -> str:
    return f'{item["subject"]["kind"]}:{item["subject"]["name"]}'


@pytest.fixture
def api(api: Api) -> Namespaced:
    """The module's client over a namespace of the test's own."""
    return namespaced(api)


def _names(api: Namespaced, caller: str) -> list[str]:
    resp = api.as_(caller).get(api.contexts)
    assert resp.status_code == 200, resp.text
    return [c["name"] for c in resp.json()["items"]]


def _grants(api: Namespaced) -> dict[str, list[str]]:
    resp = api.as_("user:alice").get(api.context + "/grants")
    assert resp.status_code == 200, resp.text
    return {_key(g): g["permissions"] for g in resp.json()["items"]}


def _grant(api: Namespaced, subject: str, *permissions: str) -> None:
    resp = api.as_("user:alice").put(api.context + "/grants", {
        "subject": _subject(subject), "permissions": list(permissions)})
    assert resp.status_code == 200, resp.text


def test_a_long_subject_is_granted_lists_its_contexts_and_is_revoked(api: Namespaced) -> None:
    alice = api.as_("user:alice")
    assert alice.post("/v1/contexts", alice.context_body()).status_code == 201
    _grant(api, LONG_USER, "read")
    _grant(api, LONG_AGENT, "read", "attach")
    assert _grants(api) == {"user:alice": ["read", "write", "attach", "derive", "administer"],
                            LONG_USER: ["read"], LONG_AGENT: ["read", "attach"]}
    # the long subject reads what it was granted, and only it (not a subject one character off)
    assert _names(api, LONG_USER) == ["research-memory"]
    assert api.as_(LONG_USER).get(api.context).status_code == 200
    assert _names(api, NEAR_USER) == []
    assert api.as_(NEAR_USER).get(api.context).status_code == 404
    # the catalog keeps serving: a context created afterwards is listed
    assert alice.post("/v1/contexts", alice.context_body(name="later")).status_code == 201
    assert _names(api, "user:alice") == ["later", "research-memory"]
    resp = alice.delete(api.context + "/grants", _subject(LONG_USER))
    assert resp.status_code == 200, resp.text
    assert _names(api, LONG_USER) == []
    assert list(_grants(api)) == [LONG_AGENT, "user:alice"]
    _grant(api, NEAR_USER, "read")
    assert _names(api, NEAR_USER) == ["research-memory"]
    assert _names(api, LONG_USER) == []


def _members(api: Namespaced) -> str:
    return f"/v1/namespaces/{api.ns}/members"


def _put_member(api: Namespaced, caller: str, subject: str, role: str) -> None:
    resp = api.as_(caller).put(_members(api), {"subject": _subject(subject), "role": role})
    assert resp.status_code == 200, resp.text


def _roles(api: Namespaced, caller: str = ADMIN) -> list[tuple[str, str]]:
    resp = api.as_(caller).get(_members(api))
    assert resp.status_code == 200, resp.text
    return [(_key(m), m["role"]) for m in resp.json()["items"]]


def _workspaces(api: Namespaced, caller: str) -> list[dict[str, str]]:
    """The workspace picker's list for ``caller``."""
    resp = api.as_(caller).get("/v1/workspaces")
    assert resp.status_code == 200, resp.text
    items: list[dict[str, str]] = resp.json()["items"]
    return items


def test_a_long_member_is_listed_acts_changes_and_leaves(api: Namespaced) -> None:
    _put_member(api, ADMIN, "user:alice", "owner")
    _put_member(api, "user:alice", LONG_USER, "admin")
    _put_member(api, "user:alice", LONG_AGENT, "viewer")
    _put_member(api, "user:alice", NEAR_USER, "viewer")
    listed = [("agent:" + LONG_MULTIBYTE, "viewer"), ("user:alice", "owner"),
              (LONG_USER, "admin"), (NEAR_USER, "viewer")]
    assert _roles(api) == sorted(listed)  # by kind:name, code-point order
    # the long member acts with its role: lists the members, and its collection reaches agents
    # (collection admission recorded it as a member when it created the collection)
    assert _roles(api, LONG_USER) == sorted(listed)
    assert _workspaces(api, LONG_USER) == [{"namespace": api.ns, "role": "admin"}]
    assert _workspaces(api, NEAR_USER) == [{"namespace": api.ns, "role": "viewer"}]
    create_context(api, C, owner=LONG_USER, ws=api.ns)
    publish(api, C, REV1, contracts(), owner=LONG_USER, ws=api.ns)
    agent = Agent(api, token(api, creator=LONG_USER))
    resp = agent.post(LIST, {"collectionId": C})
    assert resp.status_code == 200, resp.text
    # a role changes in place; removal takes that subject only
    _put_member(api, "user:alice", LONG_USER, "member")
    assert dict(_roles(api))[LONG_USER] == "member"
    resp = api.as_("user:alice").delete(f"{_members(api)}/{quote(LONG_USER, safe=':')}")
    assert resp.status_code == 204, resp.text
    _put_member(api, "user:alice", "user:bob", "viewer")
    assert _roles(api) == sorted([*(m for m in listed if m[0] != LONG_USER),
                                  ("user:bob", "viewer")])
    assert api.as_(LONG_USER).get(_members(api)).status_code == 404
    assert _workspaces(api, LONG_USER) == []
    assert _roles(api, NEAR_USER) == _roles(api)
