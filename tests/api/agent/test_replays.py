"""Replays over HTTP with real PostgreSQL (agent-context-api.md §8): verify after nothing
changed, after one record changed and after a context was deleted; recompute reproducing the
pack with an empty diff; every run recorded. Each test replays from a workspace of its own;
expiry after a short retention (which changes the service's retention) is in
test_replays_service_wide.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.store import EVENTS_TABLE
from tests.api.agent.own_workspace import alice_reading as alice_reading  # the fixtures
from tests.api.agent.own_workspace import own_with_corpus as own_with_corpus
from tests.api.agent.packs_corpus import (
    FACTS,
    FACTS_REV,
    TASK,
    facts_records,
    pack_body,
)
from tests.api.agent.packs_support import REPLAYS, Agent, publish
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import token

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
CHANGED_TEXT = "Acme appointed Priya Raman as CFO effective 1 July 2024 (press release)."


def replay(agent: Agent, replay_id: str, **body: Any) -> Any:
    resp = agent.post(f"{REPLAYS}/{replay_id}", body)
    assert resp.status_code == 200, resp.text
    assert int(resp.headers["X-Context-Position"]) > 0
    return resp.json()


def replayed(container: bootstrap.Container) -> list[str]:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute(f"SELECT state FROM {EVENTS_TABLE} WHERE topic = 'ContextPackReplayed'"
                    " ORDER BY notification_id")
        return [bytes(r["state"]).decode() for r in cur.fetchall()]


@pytest.fixture
def runs(container: bootstrap.Container) -> Callable[[], list[str]]:
    """The runs recorded since the test began: the module's tests run one after another on its
    one service, so these are the test's own."""
    earlier = len(replayed(container))
    return lambda: replayed(container)[earlier:]


def test_verify_after_nothing_changed_matches(alice: Agent,
                                              runs: Callable[[], list[str]]) -> None:
    pack = alice.pack(pack_body()).json()
    answer = replay(alice, pack["replayId"], mode="verify")
    assert list(answer) == ["replayId", "mode", "position", "items", "summary", "merkleRoot",
                            "currentMerkleRoot", "matches"]
    assert answer["replayId"] == pack["replayId"] and answer["mode"] == "verify"
    assert answer["position"] == pack["asOf"]["position"]
    assert answer["items"] == [{"id": i["id"], "status": "unchanged", "recordedHash": i["hash"],
                                "currentHash": i["hash"]} for i in pack["items"]]
    assert answer["summary"] == {"unchanged": len(pack["items"]), "changed": 0,
                                 "unavailable": 0}
    assert answer["merkleRoot"] == answer["currentMerkleRoot"] == pack["receipt"]["merkleRoot"]
    assert answer["matches"] is True
    assert len(runs()) == 1


def test_verify_after_one_record_changed_reports_that_item(alice: Agent,
                                                            own: Namespaced) -> None:
    pack = alice.pack(pack_body()).json()
    publish(own, FACTS, FACTS_REV, facts_records(CHANGED_TEXT), ws=own.ns, new_revision=False)
    answer = replay(alice, pack["replayId"], mode="verify")
    statuses = {i["id"]: i["status"] for i in answer["items"]}
    assert statuses.pop("psg:company-facts/cfo-2024") == "changed"
    # other items built from that record (its graph facts, its document) may change too;
    # every passage item of another record is unchanged
    assert all(status == "unchanged" for item, status in statuses.items()
               if item.startswith("psg:"))
    assert answer["matches"] is False
    assert answer["position"] > pack["asOf"]["position"]


def test_verify_after_a_context_was_deleted_reports_its_items_unavailable(
        alice: Agent, own: Namespaced) -> None:
    pack = alice.pack(pack_body()).json()
    resp = own.as_("user:alice").delete(f"/v1/namespaces/{own.ns}/contexts/{FACTS}")
    assert resp.status_code == 204, resp.text
    answer = replay(alice, pack["replayId"], mode="verify")
    for item in answer["items"]:
        from_facts = item["id"].startswith(("psg:company-facts/", "doc:company-facts/"))
        if from_facts:
            assert item["status"] == "unavailable" and "currentHash" not in item
        elif item["id"].startswith("psg:"):
            assert item["status"] == "unchanged"
    assert answer["summary"]["unavailable"] >= 1 and answer["matches"] is False


def test_recompute_reproduces_the_pack_with_an_empty_diff(
        alice: Agent, own: Namespaced, runs: Callable[[], list[str]]) -> None:
    pack = alice.pack(pack_body()).json()
    # the head moves; the recorded position does not
    publish(own, FACTS, "6" * 64, facts_records(CHANGED_TEXT, "6" * 64), ws=own.ns)
    answer = replay(alice, pack["replayId"], mode="recompute", task=TASK)
    assert list(answer) == ["replayId", "mode", "engineVersion", "pack", "diff"]
    assert answer["engineVersion"] == {"recorded": "pack-engine/2", "current": "pack-engine/2"}
    expected = {k: v for k, v in pack.items() if k not in ("replayId", "expiresAt")}
    assert answer["pack"] == expected
    assert answer["diff"] == {"added": [], "removed": [], "changed": [],
                              "unchanged": len(pack["items"])}
    # verify sees the head, recompute the recorded position: two runs, both recorded
    assert replay(alice, pack["replayId"], mode="verify")["matches"] is False
    assert len(runs()) == 2


def test_any_credential_of_the_workspace_may_replay(alice: Agent, own: Namespaced) -> None:
    pack = alice.pack(pack_body()).json()
    adam = Agent(own, token(own, creator="user:adam"))
    answer = replay(adam, pack["replayId"], mode="verify")
    assert answer["summary"]["unavailable"] == sum(
        1 for i in pack["items"] if "notes" in i["id"] or i["source"].get("collectionId")
        == "notes")
