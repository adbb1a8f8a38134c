"""Replays over HTTP on a service of the test's own (agent-context-api.md §8): expiry after a
short retention, which the test sets on the service. The other replay tests share one service
(test_replays.py)."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest

from tests.api.agent.packs_corpus import pack_body, seed_corpus
from tests.api.agent.packs_support import REPLAYS, Agent
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.conftest import Api
from tests.api.sets_support import token

pytestmark = pytest.mark.postgres


@pytest.fixture
def alice(api: Api) -> Agent:
    seed_corpus(api)
    return Agent(api, token(api))


def replay(agent: Agent, replay_id: str, **body: Any) -> Any:
    resp = agent.post(f"{REPLAYS}/{replay_id}", body)
    assert resp.status_code == 200, resp.text
    assert int(resp.headers["X-Context-Position"]) > 0
    return resp.json()


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
