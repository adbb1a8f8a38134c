"""``verify`` weighs the collections the pack could read at its position (agent-context-api.md
§8.1, §3.4 rule 5): a name a member took again since the pack was no collection the pack read
(the generation that lived then was a non-member's, not admitted), so the new generation's
records are no contradiction of a recorded item.

One service for the module: every test's workspace is a namespace of its own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.agent.own_workspace import own_with_members as own_with_members  # the fixture
from tests.api.agent.packs_support import (
    PACKS,
    REPLAYS,
    Agent,
    create_context,
    grant,
    publish,
    record,
)
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import token

pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
REV = "5" * 64
REV2 = "6" * 64
STRANGER = "user:mallory"  # holds no role in the workspace
READER = "user:adam"
TASK = "quay depth metres"


def _pack(agent: Agent) -> dict[str, Any]:
    resp = agent.post(PACKS, {"task": TASK, "budget": {"maxTokens": 4000},
                              "asOf": {"validTime": "2025-01-01T00:00:00Z"},
                              "retrieval": "lexical", "filters": {"sources": ["passages"]}})
    assert resp.status_code == 200, resp.text
    found: dict[str, Any] = resp.json()
    return found


def _setup(own: Namespaced) -> tuple[Agent, dict[str, Any]]:
    """A member's collection with the quay depth, and a stranger's collection (not admitted)
    shared with the reader; the reader's pack holds the member's passage only."""
    create_context(own, "first", ws=own.ns)
    publish(own, "first", REV, [record("cap", "first", REV, "The quay depth is nine metres.",
                                       factKey="quay.depth")], ws=own.ns)
    grant(own, "first", READER, "read", ws=own.ns)
    create_context(own, "harbour", owner=STRANGER, ws=own.ns)
    publish(own, "harbour", REV, [record("note", "harbour", REV, "Tides turn at noon.")],
            owner=STRANGER, ws=own.ns)
    grant(own, "harbour", READER, "read", owner=STRANGER, ws=own.ns)
    reader = Agent(own, token(own, creator=READER))
    pack = _pack(reader)
    assert [i["id"] for i in pack["items"]] == ["psg:first/cap"]
    assert "contradicts" not in pack["items"][0]
    return reader, pack


def _verified_unchanged(reader: Agent, pack: dict[str, Any]) -> None:
    answer = reader.post(f"{REPLAYS}/{pack['replayId']}", {"mode": "verify"})
    assert answer.status_code == 200, answer.text
    recorded = pack["items"][0]["hash"]
    assert answer.json()["items"] == [{"id": "psg:first/cap", "status": "unchanged",
                                       "recordedHash": recorded, "currentHash": recorded}]


def test_verify_ignores_a_name_a_member_took_again_since_the_pack(own: Namespaced) -> None:
    """The stranger's collection (not admitted: the pack did not read it) deleted, a member
    creates one of the same name whose record contradicts the recorded passage: that
    generation was created after the pack, nothing the pack stood on changed."""
    reader, pack = _setup(own)
    resp = own.as_(STRANGER).delete(f"/v1/namespaces/{own.ns}/contexts/harbour")
    assert resp.status_code == 204, resp.text
    create_context(own, "harbour", ws=own.ns)
    publish(own, "harbour", REV2, [record("cap", "harbour", REV2,
                                          "The quay depth is eleven metres.",
                                          factKey="quay.depth")], ws=own.ns)
    grant(own, "harbour", READER, "read", ws=own.ns)
    now = _pack(reader)  # the name is read now: its record contradicts the passage today
    assert "psg:harbour/cap" in by_ids(now)
    _verified_unchanged(reader, pack)


def by_ids(pack: dict[str, Any]) -> list[str]:
    return [i["id"] for i in pack["items"]]
