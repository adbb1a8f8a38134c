"""Replays over HTTP with real PostgreSQL (agent-context-api.md §8): verify after nothing
changed, after one record changed and after a context was deleted; recompute reproducing the
pack with an empty diff; expiry after a short retention; every run recorded."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.eventstore.store import EVENTS_TABLE
from tests.api.agent.packs_corpus import (
    FACTS,
    FACTS_REV,
    TASK,
    facts_records,
    pack_body,
    seed_corpus,
)
from tests.api.agent.packs_support import REPLAYS, Agent, publish
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.conftest import Api
from tests.api.sets_support import token

pytestmark = pytest.mark.postgres
CHANGED_TEXT = "Acme appointed Priya Raman as CFO effective 1 July 2024 (press release)."


@pytest.fixture
def alice(api: Api) -> Agent:
    seed_corpus(api)
    return Agent(api, token(api))


def replay(agent: Agent, replay_id: str, **body: Any) -> Any:
    resp = agent.post(f"{REPLAYS}/{replay_id}", body)
    assert resp.status_code == 200, resp.text
    assert int(resp.headers["X-Context-Position"]) > 0
    return resp.json()


def runs(container: bootstrap.Container) -> list[str]:
    with container.datastore.transaction(commit=False) as cur:
        cur.execute(f"SELECT state FROM {EVENTS_TABLE} WHERE topic = 'ContextPackReplayed'"
                    " ORDER BY notification_id")
        return [bytes(r["state"]).decode() for r in cur.fetchall()]


def test_verify_after_nothing_changed_matches(alice: Agent,
                                              container: bootstrap.Container) -> None:
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
    assert len(runs(container)) == 1


def test_verify_after_one_record_changed_reports_that_item(alice: Agent, api: Api) -> None:
    pack = alice.pack(pack_body()).json()
    publish(api, FACTS, FACTS_REV, facts_records(CHANGED_TEXT), new_revision=False)
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
        alice: Agent, api: Api) -> None:
    pack = alice.pack(pack_body()).json()
    resp = api.as_("user:alice").delete(f"/v1/namespaces/acme/contexts/{FACTS}")
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
        alice: Agent, api: Api, container: bootstrap.Container) -> None:
    pack = alice.pack(pack_body()).json()
    # the head moves; the recorded position does not
    publish(api, FACTS, "6" * 64, facts_records(CHANGED_TEXT, "6" * 64))
    answer = replay(alice, pack["replayId"], mode="recompute", task=TASK)
    assert list(answer) == ["replayId", "mode", "engineVersion", "pack", "diff"]
    assert answer["engineVersion"] == {"recorded": "pack-engine/2", "current": "pack-engine/2"}
    expected = {k: v for k, v in pack.items() if k not in ("replayId", "expiresAt")}
    assert answer["pack"] == expected
    assert answer["diff"] == {"added": [], "removed": [], "changed": [],
                              "unchanged": len(pack["items"])}
    # verify sees the head, recompute the recorded position: two runs, both recorded
    assert replay(alice, pack["replayId"], mode="verify")["matches"] is False
    assert len(runs(container)) == 2


def test_any_credential_of_the_workspace_may_replay(alice: Agent, api: Api) -> None:
    pack = alice.pack(pack_body()).json()
    adam = Agent(api, token(api, creator="user:adam"))
    answer = replay(adam, pack["replayId"], mode="verify")
    assert answer["summary"]["unavailable"] == sum(
        1 for i in pack["items"] if "notes" in i["id"] or i["source"].get("collectionId")
        == "notes")


def test_a_replay_expires_after_the_retention_in_force_at_release(
        alice: Agent, api: Api) -> None:
    packs = api.client.app.state.services.packs
    packs.retention = timedelta(seconds=1)
    pack = alice.pack(pack_body()).json()
    replay(alice, pack["replayId"], mode="verify")
    time.sleep(1.1)
    resp = alice.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "verify"})
    assert (resp.status_code, resp.json()) == (410, {
        "code": "AGENT_REPLAY_EXPIRED",
        "message": f"replay {pack['replayId']} expired at {pack['expiresAt']}"})
    # the same pack again records nothing and answers the recorded expiry
    again = alice.pack(pack_body()).json()
    assert again["expiresAt"] == pack["expiresAt"]
