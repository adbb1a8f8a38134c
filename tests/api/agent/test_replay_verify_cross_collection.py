"""``verify`` of a pack whose items are joined to a collection no recorded item names
(agent-context-api.md §8.1): a release records each item's anchor collection only, so a
``contradicts`` fact between ``board`` and ``payroll``, and the ``board`` passage it flags, are
rebuilt against the collections the recorded request (and set) reads now, not only against
``board``.

One service for the module: every test's workspace is a namespace of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.own_workspace import own_with_members as own_with_members  # the fixture
from tests.api.agent.packs_corpus import pack_body
from tests.api.agent.packs_support import (
    REPLAYS,
    Agent,
    create_context,
    grant,
    publish,
    record,
    revoke,
)
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import create_set, token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REV = "7" * 64
BOARD_TEXT = "Marco Silva is the CFO of Acme."
PAYROLL_TEXT = "Dana Lee is the CFO of Acme, paid monthly."
BOARD_ONLY = {"collectionIds": ["board", "payroll"], "documentIds": ["board/#cfo"]}


@pytest.fixture
def both(own: Namespaced) -> Namespaced:
    """``board`` and ``payroll``, each with one record stating who the CFO is (one fact key,
    different texts: each contradicts the other), readable by adam."""
    for name, text in (("board", BOARD_TEXT), ("payroll", PAYROLL_TEXT)):
        create_context(own, name, ws=own.ns)
        publish(own, name, REV, [record("cfo", name, REV, text, factKey="cfo")], ws=own.ns)
        grant(own, name, "user:adam", "read", ws=own.ns)
    return own


def board_only_pack(agent: Agent) -> dict[str, Any]:
    """A pack over both collections whose items all come from ``board``: the passage flagged as
    contradicted by ``payroll/cfo`` and the ``contradicts`` fact joining the two."""
    pack: dict[str, Any] = agent.pack(pack_body(filters=BOARD_ONLY)).json()
    assert {i["source"]["collectionId"] for i in pack["items"]} == {"board"}
    passage = next(i for i in pack["items"] if i["id"] == "psg:board/cfo")
    assert passage["contradicts"] == ["payroll/cfo"]
    assert any(i["source"]["kind"] == "graph" and "payroll/cfo" in i["text"]
               for i in pack["items"])
    return pack


def verify(agent: Agent, replay_id: str) -> Any:
    resp = agent.post(f"{REPLAYS}/{replay_id}", {"mode": "verify"})
    assert resp.status_code == 200, resp.text
    return resp


def unchanged(pack: dict[str, Any]) -> list[dict[str, str]]:
    return [{"id": i["id"], "status": "unchanged", "recordedHash": i["hash"],
             "currentHash": i["hash"]} for i in pack["items"]]


def test_verify_after_nothing_changed_weighs_the_collection_no_item_names(
        both: Namespaced) -> None:
    alice = Agent(both, token(both))
    pack = board_only_pack(alice)
    answer = verify(alice, pack["replayId"]).json()
    assert answer["items"] == unchanged(pack)
    assert answer["summary"] == {"unchanged": len(pack["items"]), "changed": 0,
                                 "unavailable": 0}
    assert answer["matches"] is True


def test_verify_sees_the_joined_record_change(both: Namespaced) -> None:
    """The joined collection is read, not assumed: once ``payroll`` says what ``board`` says,
    the contradiction is gone and both items built on it differ."""
    alice = Agent(both, token(both))
    pack = board_only_pack(alice)
    publish(both, "payroll", "8" * 64, [record("cfo", "payroll", "8" * 64, BOARD_TEXT,
                                               factKey="cfo")], ws=both.ns)
    answer = verify(alice, pack["replayId"]).json()
    statuses = {i["id"]: i["status"] for i in answer["items"]}
    fact = next(i["id"] for i in pack["items"] if i["source"]["kind"] == "graph")
    assert statuses["psg:board/cfo"] == "changed"
    assert statuses[fact] == "unavailable"  # no longer effective
    assert answer["matches"] is False


def test_verify_by_a_caller_who_no_longer_reads_the_joined_collection(
        both: Namespaced) -> None:
    """§8: a replay never shows what the caller cannot read today. The fact joining ``payroll``
    is unavailable, and the passage reads as the caller's own pack builds it now, without the
    flag; nothing of ``payroll`` is in the answer."""
    adam = Agent(both, token(both, creator="user:adam"))
    pack = board_only_pack(adam)
    revoke(both, "payroll", "user:adam", ws=both.ns)
    now = adam.pack(pack_body(filters={"collectionIds": ["board"]})).json()
    passage = next(i for i in now["items"] if i["id"] == "psg:board/cfo")
    assert passage["contradiction"] is False
    resp = verify(adam, pack["replayId"])
    answer = resp.json()
    recorded = {i["id"]: i for i in pack["items"]}
    checked = {i["id"]: i for i in answer["items"]}
    assert checked.pop("psg:board/cfo") == {
        "id": "psg:board/cfo", "status": "changed",
        "recordedHash": recorded["psg:board/cfo"]["hash"], "currentHash": passage["hash"]}
    fact = next(i for i in pack["items"] if i["source"]["kind"] == "graph")
    assert checked.pop(fact["id"]) == {"id": fact["id"], "status": "unavailable",
                                       "recordedHash": fact["hash"]}
    assert all(c["status"] != "unchanged" or c["currentHash"] == recorded[c["id"]]["hash"]
               for c in checked.values())
    assert "payroll" not in resp.text and PAYROLL_TEXT not in resp.text
    assert answer["matches"] is False


def test_verify_of_a_pack_bound_to_a_set_weighs_the_sets_collections(
        both: Namespaced) -> None:
    """The set's scope is what the recorded pack read: a credential bound to it verifies its
    pack unchanged, and so does an unbound one reading both collections."""
    create_set(both, "finance", collections=["board", "payroll"], definitions=[
        {"term": "CFO", "definition": "the executive responsible for Acme's finances."}])
    bound = Agent(both, token(both, context_set_id="finance"))
    pack: dict[str, Any] = bound.pack(pack_body(
        filters={"documentIds": ["board/#cfo"]})).json()
    assert pack["items"][0]["id"] == "set:finance/definition/CFO"
    assert {i["source"].get("collectionId") for i in pack["items"][1:]} == {"board"}
    passage = next(i for i in pack["items"] if i["id"] == "psg:board/cfo")
    assert passage["contradicts"] == ["payroll/cfo"]
    for agent in (bound, Agent(both, token(both))):
        answer = verify(agent, pack["replayId"]).json()
        assert answer["items"] == unchanged(pack)
        assert answer["matches"] is True
