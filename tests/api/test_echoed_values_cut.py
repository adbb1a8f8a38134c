"""A caller's value quoted in a refusal is cut to 64 code points and an ellipsis (decision 0059),
in every ``/v1`` and agent API message that quotes one (``unsupported permission "<p>"``,
``collection "<c>" not found``, …): each sent 100 KB long (the longest its route lets through,
where that is less) answers its documented message, the value cut, in an answer of a few hundred
bytes. Before, each answered the value whole: the answer as large as the body."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from litestar.testing import TestClient

from context_service import bootstrap
from tests.api.agent.templates_namespaced import templates
from tests.api.agent.templates_support import template_body
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import seed_workspace, sets, token
from tests.api.test_query import digest, put_index
from tests.support.api_helpers import fresh
from tests.support.fake_cluster import FakeCluster

# one service for the module, over a fake cluster with one CSI class and its snapshot class
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
BIG = 100 * 1024  # code points of the value sent
ECHO = 64  # code points of it the message keeps (decision 0059)
ALICE = "user:alice"  # the workspace's owner, and the owner of every context below
DRIVER = "csi.fast"
REV = digest("echoed")
ANSWER_BYTES = 1024  # every answer below: its message, a cut value, the error's keys


def long_value(size: int = BIG) -> str:
    """``size`` code points, the 64th of them two bytes long (a cut counts code points)."""
    return ("v" * 63 + "\u00e9") * (size // 64)


@dataclass
class World:
    api: Namespaced  # as alice, over a workspace (and namespace) of the module's own
    bearer: str  # an agent credential of the workspace, context:read

    def path(self, context: str, suffix: str = "") -> str:
        return f"/v1/namespaces/{self.api.ns}/contexts/{context}{suffix}"

    def agent(self, path: str, body: Any = None, raw: bytes | None = None,
              headers: dict[str, str] | None = None) -> Any:
        return self.api.as_(None).post(path, body, raw=raw, headers={
            "Authorization": f"Bearer {self.bearer}", **(headers or {})})


def _context(api: Namespaced, name: str, storage_class: str, type_: str = "memory") -> None:
    storage = {"backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce",
               "storageClass": storage_class}
    made = api.post("/v1/contexts", {"name": name, "namespace": api.ns, "type": type_,
                                     "storage": storage})
    assert made.status_code == 201, made.text[:300]


@pytest.fixture(scope="module")
def world(module_container: bootstrap.Container) -> Iterator[World]:
    cluster = FakeCluster()
    cluster.add_storage_class("fast", DRIVER)
    cluster.add_snapshot_class("fast-snap", DRIVER)
    module_container.cluster = cluster  # before the application is built over it
    with TestClient(app=bootstrap.app(module_container)) as client:
        api = Namespaced(client, fresh("echo")).as_(ALICE)
        seed_workspace(api)
        _context(api, "notes", "fast")
        _context(api, "odd", long_value())  # storage.storageClass is not validated
        _context(api, "library", "fast", "knowledge")
        published = api.post(f"/v1/namespaces/{api.ns}/contexts/library/revisions", {
            "id": REV, "createdAt": "2026-05-01T10:00:00Z", "operation": "sync"})
        assert published.status_code == 201, published.text
        yield World(api, token(api))


def _shown(value: str) -> str:
    """``value`` as decision 0059 shows it: its first 64 code points and an ellipsis."""
    return value[:ECHO] + "\u2026"


def _quoted(value: str) -> str:
    return json.dumps(_shown(value), ensure_ascii=False)


@dataclass(frozen=True)
class Place:
    """One message quoting a caller's value: how to send ``value`` there, and the answer."""

    send: Callable[[World, str], Any]
    status: int
    body: Callable[[str], dict[str, Any]]  # the answer's body for the value shown


def _v1(message: str) -> Callable[[str], dict[str, Any]]:
    return lambda shown: {"error": "invalid_request", "message": message.format(shown)}


def _agent(status_code: str, message: str) -> Callable[[str], dict[str, Any]]:
    return lambda shown: {"code": status_code, "message": message.format(shown)}


def _grant(w: World, value: str) -> Any:
    return w.api.put(w.path("notes", "/grants"), {"subject": {"kind": "user", "name": "bob"},
                                                  "permissions": ["read", value]})


def _member(w: World, value: str) -> Any:
    return w.api.put(f"/v1/namespaces/{w.api.ns}/members",
                     {"subject": {"kind": "user", "name": "zed"}, "role": value})


def _snapshot_class(w: World, value: str) -> Any:
    return w.api.post(w.path("notes", "/snapshots"), {"name": "s1", "snapshotClass": value})


def _storage_class(w: World, _: str) -> Any:  # the value is the one "odd" was created with
    return w.api.post(w.path("odd", "/snapshots"), {"name": "s1"})


def _placeholder(w: World, value: str) -> Any:
    return w.api.post(templates(w.api), template_body(
        "echo", f"SELECT record_id FROM passages WHERE collection_id = :{value}"))


def _set(**fields: Any) -> Callable[[World, str], Any]:
    def send(w: World, value: str) -> Any:
        body = {"id": "echo", "name": "Echo", "collections": ["notes"]}
        body.update({key: json.loads(json.dumps(item).replace("VALUE", value))
                     for key, item in fields.items()})
        return w.api.post(sets(w.api), body)
    return send


def _record(w: World, value: str) -> Any:
    record = {"id": value, "context": "library", "type": "knowledge", "revision": REV,
              "text": "words"}
    return put_index(w.api, "library", {"revision": REV, "records": [record]})


def _pack(w: World, value: str) -> Any:
    return w.agent("/api/agent/v1/context-packs",
                   {"task": "cfo", "filters": {"collectionIds": [value]}})


def _fields_list(w: World, value: str) -> Any:
    return w.agent("/api/agent/v1/fields/list", {"collectionId": value})


def _fields_query(w: World, value: str) -> Any:
    return w.agent("/api/agent/v1/fields/query", {"collectionId": value, "fields": ["x"]})


PLACES = {
    # /v1 (context-service-api.md §1.1.7: quoted values are JSON strings)
    "grant permission": Place(_grant, 400, _v1("unsupported permission {}")),
    "member role": Place(_member, 400, _v1("unsupported role {}")),
    "snapshot class": Place(_snapshot_class, 400, _v1(
        "invalid context resource: snapshot class {} does not match storage driver "
        f'"{DRIVER}"')),
    "storage class": Place(_storage_class, 400, _v1(
        "invalid context resource: storage class {} not found")),
    "query record id": Place(_record, 400, _v1(
        "invalid context resource: query record {} is too large to store (at most 983040 bytes "
        "encoded)")),
    # context sets and query templates (agent-context-api.md §6.3, §11.2)
    "cited record": Place(_set(verifiedAnswers=[{
        "id": "x", "question": "q", "answer": "a", "citations": ["VALUE"]}]), 400,
        _v1("verified answer \"x\" cites {} outside the set's collections")),
    "definition term": Place(_set(definitions=[{"term": "VALUE", "definition": "d"}]), 400,
                             _v1("definition {} requires a term, a definition and valid aliases")),
    "instruction id": Place(_set(instructions=[{"id": "VALUE", "text": "t"}]), 400, _v1(
        "instruction {} requires a distinct id and a text of at most 4000 characters")),
    "required evidence id": Place(_set(requiredEvidence=[{
        "id": "VALUE", "description": "d", "query": "cfo"}]), 400,
        _v1("required evidence {} requires a distinct id, a description and a query")),
    "set query template": Place(_set(queryTemplates=["VALUE"]), 400, _v1(
        "invalid context set: query template {} not found")),
    # the agent routes (agent-context-api.md §7, §10) and /mcp's tool arguments
    "pack collection": Place(_pack, 404, _agent("NOT_FOUND", "collection {} not found")),
    "fields/list collection": Place(_fields_list, 404,
                                    _agent("NOT_FOUND", "collection {} not found")),
    "fields/query collection": Place(_fields_query, 404,
                                     _agent("NOT_FOUND", "collection {} not found")),
}
# sizes where the route lets less than 100 KB through to the message (or needs more to reach it)
SIZES = {"query record id": 985_000}


@pytest.mark.parametrize("place", list(PLACES))
def test_a_long_value_is_shown_cut_in_its_documented_message(world: World, place: str) -> None:
    found = PLACES[place]
    value = long_value(SIZES.get(place, BIG))
    answer = found.send(world, value)
    assert (answer.status_code, answer.json()) == (found.status, found.body(_quoted(value))), \
        answer.text[:300]
    assert len(answer.content) < ANSWER_BYTES, len(answer.content)


def test_a_long_placeholder_is_shown_cut(world: World) -> None:
    """Not JSON-quoted (its documented form is ``placeholder ":<x>"``, a name of ``[a-z0-9_]``)
    and at most 20,000 characters long (the longest ``sql``): cut all the same."""
    value = "p" * 19_000
    answer = _placeholder(world, value)
    assert (answer.status_code, answer.json()) == (400, {
        "error": "invalid_request",
        "message": f'invalid query template: placeholder ":{_shown(value)}" is not a declared '
                   "parameter"}), answer.text[:300]
    assert len(answer.content) < ANSWER_BYTES, len(answer.content)


@pytest.mark.parametrize(("key", "path"), [
    ("k" * BIG, lambda key: "$." + _shown(key)),  # a plain name: $.name
    ("k-" * (BIG // 2), lambda key: f"$[{_quoted(key)}]"),  # any other: $["name"]
], ids=["name", "other key"])
def test_a_long_tool_argument_key_is_shown_cut(world: World, key: str,
                                               path: Callable[[str], str]) -> None:
    """A ``tools/call`` over ``/mcp`` whose argument under ``key`` is no JSON value (NaN, which
    the SDK's parser lets through) is refused naming the argument's path, the key cut."""
    body = ('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"context_pack",'
            f'"arguments":{{"task":"cfo","{key}":NaN}}}}}}')
    answer = world.agent("/mcp", raw=body.encode(), headers={
        "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18"})
    assert answer.status_code == 200, answer.text[:300]
    result = answer.json()["result"]
    assert result["isError"] is True and result["structuredContent"] == {
        "code": "INVALID_REQUEST", "message": f"malformed JSON arguments: {path(key)} is not a "
        "finite number (NaN, Infinity, or beyond every double)"}, str(result)[:300]
    assert len(answer.content) < 2 * ANSWER_BYTES, len(answer.content)
