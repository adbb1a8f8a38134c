"""Replays of a pack released by pack-engine/1 under pack-engine/2 (agent-context-api.md §8):
``verify`` rebuilds the recorded items as before, ``recompute`` runs the current engine and
reports both versions with the diff against the recorded items.

One service for the module: the corpus is written once; each test records its engine-1 release
under a replay id of its own."""

from __future__ import annotations

import time
import uuid
from typing import Any

import msgspec
import pytest

from context_service.domain.context_pack.commands import ReleasePack
from context_service.domain.pack.model import ENGINE_VERSION
from tests.api.agent.packs_corpus import TASK, pack_body, seed_corpus
from tests.api.agent.packs_support import REPLAYS, Agent, pack_services
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.conftest import Api
from tests.api.sets_support import WORKSPACE, token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
ENGINE_1 = "pack-engine/1"


@pytest.fixture(scope="module")
def alice(module_api: Api) -> Agent:
    seed_corpus(module_api)
    return Agent(module_api, token(module_api))


@pytest.fixture
def engine_1_replay() -> str:
    """The id the test records its engine-1 release under: one no other test uses."""
    return "rp_" + uuid.uuid4().hex


def engine_1_release(api: Api, alice: Agent, replay_id: str) -> dict[str, Any]:
    """A pack released now, recorded again as pack-engine/1 released it (as ``replay_id``):
    its items less the last one, the order of the first two swapped (another ranking)."""
    pack: dict[str, Any] = alice.pack(pack_body()).json()
    packs = pack_services(api)
    found = packs.replays.get(WORKSPACE, pack["replayId"])
    deadline = time.monotonic() + 10
    while found is None and time.monotonic() < deadline:  # the replay view follows the log
        time.sleep(0.05)
        found = packs.replays.get(WORKSPACE, pack["replayId"])
    assert found is not None
    items = list(found.release.items[:-1])
    items[0], items[1] = items[1], items[0]
    release = msgspec.structs.replace(found.release, replay_id=replay_id,
                                      engine_version=ENGINE_1, items=tuple(items))
    packs.commands.execute(WORKSPACE, replay_id,
                           ReleasePack(release=release, retention=packs.retention))
    return pack


def replay(agent: Agent, replay_id: str, **body: Any) -> Any:
    resp = agent.post(f"{REPLAYS}/{replay_id}", body)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_verify_rebuilds_an_engine_1_pack_s_items(alice: Agent, api: Api,
                                                  engine_1_replay: str) -> None:
    pack = engine_1_release(api, alice, engine_1_replay)
    answer = replay(alice, engine_1_replay, mode="verify")
    recorded = [pack["items"][1], pack["items"][0], *pack["items"][2:-1]]
    assert [(i["id"], i["status"]) for i in answer["items"]] == [
        (i["id"], "unchanged") for i in recorded]
    assert answer["summary"] == {"unchanged": len(recorded), "changed": 0, "unavailable": 0}


def test_recompute_runs_the_current_engine_and_diffs(alice: Agent, api: Api,
                                                     engine_1_replay: str) -> None:
    pack = engine_1_release(api, alice, engine_1_replay)
    answer = replay(alice, engine_1_replay, mode="recompute", task=TASK)
    assert ENGINE_VERSION == "pack-engine/2"
    assert answer["engineVersion"] == {"recorded": ENGINE_1, "current": ENGINE_VERSION}
    assert [i["id"] for i in answer["pack"]["items"]] == [i["id"] for i in pack["items"]]
    assert answer["diff"] == {"added": [pack["items"][-1]["id"]], "removed": [],
                              "changed": [], "unchanged": len(pack["items"]) - 1}
