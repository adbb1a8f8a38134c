"""Replays of a pack whose context set had no version at its position (agent-context-api.md
§7.4, §7.12, §8): the pack read the set's collections as they were when it was released, so a
set that gains a collection afterwards changes neither its recompute (§8.2: the position pins
every input but access, so the diff is empty and ``packId`` and receipt are the recorded ones)
nor the collections ``verify`` weighs for contradictions (§8.1).

One service for the module: every test's workspace is a namespace of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.own_workspace import own_with_members as own_with_members  # the fixture
from tests.api.agent.packs_support import REPLAYS, Agent, create_context, publish, record
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import create_set, sets, token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REV = "7" * 64
T = "2025-01-01T00:00:00Z"


def seeded(own: Namespaced, name: str, id_: str, text: str, **extra: Any) -> None:
    """A knowledge context ``name`` with one published record."""
    create_context(own, name, ws=own.ns)
    publish(own, name, REV, [record(id_, name, REV, text, **extra)], ws=own.ns)


def lexical(task: str, **extra: Any) -> dict[str, Any]:
    return {"task": task, "budget": {"maxTokens": 4000}, "retrieval": "lexical",
            "filters": {"sources": ["passages"]}, **extra}


def pack_before_the_set(own: Namespaced, alice: Agent, task: str) -> dict[str, Any]:
    """A pack naming the set ``late`` at a position before the set was created: the set had
    no version there (§7.4), so the pack reads the set's collections of the time, ``vault``
    only, and reports it ``not_in_force``."""
    before = alice.pack(lexical(task, asOf={"validTime": T})).json()["asOf"]
    create_set(own, "late", collections=["vault"])
    pack: dict[str, Any] = alice.pack(lexical(task, contextSetId="late", asOf={
        "validTime": T, "systemTime": before["systemTime"]})).json()
    assert pack["asOf"]["position"] == before["position"]
    assert pack["missing"] == [{"kind": "context_set", "id": "late", "reason": "not_in_force"}]
    return pack


def widen_the_set(own: Namespaced) -> None:
    """A new version of ``late`` that also names ``annex`` (live, readable, indexed at P)."""
    resp = own.as_("user:alice").put(f"{sets(own)}/late", {
        "name": "Late", "collections": ["vault", "annex"]})
    assert resp.status_code == 200, resp.text
    assert resp.json()["version"] == 2


def test_recompute_of_a_set_without_version_at_p_ignores_collections_added_since(
        own: Namespaced) -> None:
    """§8.2: the recompute reads the collections the release read, not the set's collections
    now: its diff is empty and its ``packId`` and receipt are the recorded ones."""
    seeded(own, "vault", "v1", "The vault door opens at nine every weekday.")
    seeded(own, "annex", "a1", "The annex vault door opens at ten on weekdays.")
    alice = Agent(own, token(own))
    task = "vault door opens"
    pack = pack_before_the_set(own, alice, task)
    assert [i["id"] for i in pack["items"]] == ["psg:vault/v1"]
    widen_the_set(own)
    resp = alice.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "recompute", "task": task})
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert answer["diff"] == {"added": [], "removed": [], "changed": [], "unchanged": 1}
    assert answer["pack"]["items"] == pack["items"]
    assert answer["pack"]["missing"] == pack["missing"]
    assert answer["pack"]["packId"] == pack["packId"]
    assert answer["pack"]["receipt"] == pack["receipt"]


def test_verify_of_a_set_without_version_at_p_ignores_collections_added_since(
        own: Namespaced) -> None:
    """§8.1: a collection the set names only since the release is none the pack read, so a
    record of it sharing a recorded passage's fact key does not turn that passage
    ``changed``."""
    seeded(own, "vault", "depth", "The vault floor is nine metres down.", factKey="vault.depth")
    seeded(own, "annex", "depth", "The vault floor is eleven metres down.",
           factKey="vault.depth")
    alice = Agent(own, token(own))
    pack = pack_before_the_set(own, alice, "vault floor metres")
    assert [i["id"] for i in pack["items"]] == ["psg:vault/depth"]
    assert "contradicts" not in pack["items"][0]
    widen_the_set(own)
    resp = alice.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "verify"})
    assert resp.status_code == 200, resp.text
    answer = resp.json()
    item = pack["items"][0]
    assert answer["items"] == [{"id": item["id"], "status": "unchanged",
                                "recordedHash": item["hash"], "currentHash": item["hash"]}]
    assert answer["matches"] is True
