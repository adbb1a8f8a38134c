"""Replays at their edges (agent-context-api.md §8): recompute of a pack whose named collections
are no longer readable, the recorded order of missing documents, engine-1 packs recomputed.

One service for the module: every test's workspace is a namespace of its own."""

from __future__ import annotations

import time
import uuid
from typing import Any

import msgspec
import pytest

from context_service.domain.context_pack.commands import ReleasePack
from context_service.domain.pack.model import ENGINE_VERSION
from tests.api.agent.own_workspace import alice_reading as alice_reading  # the fixtures
from tests.api.agent.own_workspace import own_with_corpus as own_with_corpus
from tests.api.agent.packs_corpus import FACTS, NOTES, TASK, pack_body
from tests.api.agent.packs_support import (
    REPLAYS,
    Agent,
    create_context,
    grant,
    pack_services,
    publish,
    record,
    revoke,
)
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]


def replay(agent: Agent, replay_id: str, **body: Any) -> Any:
    resp = agent.post(f"{REPLAYS}/{replay_id}", body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def recorded_pack(pack: dict[str, Any]) -> dict[str, Any]:
    """The pack as a recompute states it: without ``replayId`` and ``expiresAt``."""
    return {k: v for k, v in pack.items() if k not in ("replayId", "expiresAt")}


def ids(items: list[dict[str, Any]], collection: str) -> list[str]:
    return [i["id"] for i in items if i["source"].get("collectionId") == collection]


def delete(own: Namespaced, name: str) -> None:
    resp = own.as_("user:alice").delete(f"/v1/namespaces/{own.ns}/contexts/{name}")
    assert resp.status_code == 204, resp.text


def test_recompute_of_a_named_collection_no_longer_readable_diffs_it_away(
        own: Namespaced) -> None:
    """The replay exists: the collection's items are removed, never a 404 that reads like
    'replay not found', and no other collection takes its place."""
    adam = Agent(own, token(own, creator="user:adam"))
    pack = adam.pack(pack_body(filters={"collectionIds": [FACTS]})).json()
    assert ids(pack["items"], FACTS)
    revoke(own, FACTS, "user:adam", ws=own.ns)
    answer = replay(adam, pack["replayId"], mode="recompute", task=TASK)
    assert answer["pack"]["items"] == [] and answer["pack"]["missing"] == []
    assert answer["diff"] == {"added": [], "removed": [i["id"] for i in pack["items"]],
                              "changed": [], "unchanged": 0}


def test_recompute_after_a_named_collection_was_deleted_keeps_the_others(
        alice: Agent, own: Namespaced) -> None:
    both = alice.pack(pack_body(filters={"collectionIds": [NOTES, FACTS]})).json()
    alone = alice.pack(pack_body(filters={"collectionIds": [FACTS]})).json()
    assert ids(both["items"], NOTES) and ids(both["items"], FACTS)
    delete(own, FACTS)
    answer = replay(alice, both["replayId"], mode="recompute", task=TASK)
    assert [i["id"] for i in answer["pack"]["items"]] == ids(both["items"], NOTES)
    assert answer["diff"]["removed"] == ids(both["items"], FACTS)
    # a filter left with nothing reads nothing: the notes were never asked for
    answer = replay(alice, alone["replayId"], mode="recompute", task=TASK)
    assert answer["pack"]["items"] == []
    assert answer["diff"]["removed"] == [i["id"] for i in alone["items"]]


def test_recompute_repeats_the_request_order_of_missing_documents(alice: Agent) -> None:
    """``missing`` lists documents in request order (§7.10), the record keeps them sorted:
    the recompute of an unchanged pack is that pack, packId included."""
    documents = [f"{NOTES}/#none", f"{FACTS}/#nope", f"{NOTES}/#none", f"{FACTS}/#gone"]
    pack = alice.pack(pack_body(filters={"documentIds": documents})).json()
    assert [m["documentId"] for m in pack["missing"]] == [
        f"{NOTES}/#none", f"{FACTS}/#nope", f"{FACTS}/#gone"]
    answer = replay(alice, pack["replayId"], mode="recompute", task=TASK)
    assert answer["pack"] == recorded_pack(pack)
    assert answer["diff"]["added"] == answer["diff"]["removed"] == []


def test_verify_weighs_no_record_the_caller_cannot_read(alice: Agent, own: Namespaced) -> None:
    """A contradiction with a collection the caller cannot read does not reach the hash verify
    rebuilds: the current hash is the one the caller's own pack gives the item."""
    for name, text in (("board", "Marco Silva is the CFO of Acme."),
                       ("payroll", "Dana Lee is the CFO of Acme.")):
        create_context(own, name, ws=own.ns)
        publish(own, name, "7" * 64, [record("cfo", name, "7" * 64, text, factKey="cfo")],
                ws=own.ns)
    grant(own, "board", "user:adam", "read", ws=own.ns)
    both = alice.pack(pack_body(filters={"collectionIds": ["board", "payroll"]})).json()
    item = next(i for i in both["items"] if i["id"] == "psg:board/cfo")
    assert item["contradicts"] == ["payroll/cfo"]
    adam = Agent(own, token(own, creator="user:adam"))
    own_pack = adam.pack(pack_body(filters={"collectionIds": ["board"]})).json()
    readable = next(i for i in own_pack["items"] if i["id"] == "psg:board/cfo")
    assert readable["contradiction"] is False
    answer = replay(adam, both["replayId"], mode="verify")
    checked = {i["id"]: i for i in answer["items"]}
    assert checked["psg:board/cfo"] == {"id": "psg:board/cfo", "status": "changed",
                                        "recordedHash": item["hash"],
                                        "currentHash": readable["hash"]}
    assert checked["psg:payroll/cfo"]["status"] == "unavailable"


def as_engine_1(own: Namespaced, replay_id: str) -> str:
    """The release of ``replay_id`` recorded again, unchanged, as pack-engine/1 released it
    (under a replay id of its own)."""
    packs = pack_services(own)
    deadline = time.monotonic() + 10
    while (found := packs.replays.get(own.ns, replay_id)) is None:  # the view follows the log
        assert time.monotonic() < deadline
        time.sleep(0.05)
    rid = "rp_" + uuid.uuid4().hex
    release = msgspec.structs.replace(found.release, replay_id=rid,
                                      engine_version="pack-engine/1")
    packs.commands.execute(own.ns, rid, ReleasePack(release=release, retention=packs.retention))
    return rid


def test_recompute_of_an_engine_1_lexical_pack_is_that_pack(alice: Agent,
                                                            own: Namespaced) -> None:
    """``lexical`` keeps engine 1's list: recomputed by the current engine, an engine-1 pack is
    the same pack, byte for byte, and only ``engineVersion`` says which engines ran."""
    pack = alice.pack(pack_body(retrieval="lexical")).json()
    rid = as_engine_1(own, pack["replayId"])
    answer = replay(alice, rid, mode="recompute", task=TASK)
    assert answer["engineVersion"] == {"recorded": "pack-engine/1", "current": ENGINE_VERSION}
    assert ENGINE_VERSION == "pack-engine/2"
    assert answer["pack"] == recorded_pack(pack)
    assert answer["diff"] == {"added": [], "removed": [], "changed": [],
                              "unchanged": len(pack["items"])}
    verified = replay(alice, rid, mode="verify")
    assert verified["matches"] is True
