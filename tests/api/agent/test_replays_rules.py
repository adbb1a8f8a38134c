"""The replay route's checks over HTTP (agent-context-api.md §8): body rules, a replay of
another workspace answering like an unknown one, expiry, and recompute's task and set checks,
in that order. Releases are recorded through the write model here, so these checks are proven
apart from pack assembly; the context_pack_replays view serves them. Each test speaks about a
workspace and replay ids of its own on the module's one service."""

from __future__ import annotations

import hashlib
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from context_service import bootstrap
from context_service.domain.context_pack.commands import ReleasePack
from context_service.domain.context_pack.events import ContextPackReleased, PackParameters
from context_service.domain.values import format_timestamp
from tests.api.agent.own_workspace import agent_reading as agent_reading  # the fixtures
from tests.api.agent.own_workspace import own_with_members as own_with_members
from tests.api.agent.packs_support import REPLAYS, Agent, violations
from tests.api.agent.packs_support import module_settings as module_settings  # the fixture
from tests.api.namespaced import Namespaced
from tests.api.sets_namespaced import create_set, token
from tests.support.api_helpers import fresh

# one service for the module: every test's workspace is a namespace of its own
pytestmark = [pytest.mark.postgres, pytest.mark.shared_service]
TASK = "Who is the current CFO, and since when?"
RID = "rp_" + "0" * 31 + "1"
NOT_FOUND = {"code": "NOT_FOUND", "message": "replay not found"}


def fresh_rid() -> str:
    """A replay id no other test records."""
    return "rp_" + uuid.uuid4().hex


def released(replay_id: str = RID, set_id: str = "") -> ContextPackReleased:
    now = datetime.now(UTC)
    return ContextPackReleased(
        at=now, actor="user:alice", replay_id=replay_id, pack_id="pk_" + "2" * 32,
        credential_id="0123456789abcdef", created_by="user:alice",
        task_sha256=hashlib.sha256(TASK.encode()).hexdigest(),
        parameters=PackParameters(max_tokens=2000, max_latency_ms=15000,
                                  coverage="best_effort", collection_ids=(), document_ids=(),
                                  sources=("passages", "graph", "documents"),
                                  retrieval="hybrid", context_set_id=set_id,
                                  context_set_version=1 if set_id else 0),
        valid_time=now, system_time=now, position=1, engine_version="pack-engine/1",
        items=(), merkle_root="sha256:" + hashlib.sha256(b"").hexdigest(), complete=True,
        missing=(), used_tokens=0, expires_at=now)


def record(container: bootstrap.Container, ws: str = "acme", replay_id: str = RID,
           retention: timedelta = timedelta(hours=1), set_id: str = "") -> datetime:
    outcome = container.context_packs.execute(
        ws, replay_id, ReleasePack(release=released(replay_id, set_id), retention=retention))
    assert outcome.position > 0 and outcome.state.release is not None
    return outcome.state.release.expires_at


@pytest.mark.parametrize(("body", "expected"), [
    ({}, [{"path": "$.mode", "message": "is required"}]),
    ({"mode": "rerun"}, [{"path": "$.mode", "message": "must be verify or recompute"}]),
    ({"mode": "verify", "task": " "}, [{"path": "$.task", "message": "must not be blank"}]),
    ({"mode": "recompute", "task": "x" * 4001},
     [{"path": "$.task", "message": "must be 1 to 4000 characters"}]),
    ({"mode": None, "task": ""}, [{"path": "$.mode", "message": "is required"},
                                  {"path": "$.task", "message": "must not be blank"}]),
])
def test_body_rules(agent: Agent, body: dict[str, object],
                    expected: list[dict[str, str]]) -> None:
    assert violations(agent.post(f"{REPLAYS}/{RID}", body)) == expected


def test_body_rules_come_before_the_replay_lookup(agent: Agent) -> None:
    resp = agent.post(f"{REPLAYS}/rp_unknown", raw=b'{"mode": "verify", "x": 1}')
    assert resp.status_code == 400 and resp.json()["code"] == "INVALID_REQUEST"


def test_unknown_and_other_workspace_replays_answer_alike(
        agent: Agent, container: bootstrap.Container) -> None:
    rid = fresh_rid()
    record(container, ws=fresh("other-ws"), replay_id=rid)
    for replay_id in (rid, "rp_nope", "rp%20x", "rp_" + "f" * 32):
        for mode in ("verify", "recompute"):
            resp = agent.post(f"{REPLAYS}/{replay_id}", {"mode": mode, "task": TASK})
            assert (resp.status_code, resp.json()) == (404, NOT_FOUND), replay_id


def test_an_expired_replay_answers_410_for_both_modes(
        agent: Agent, own: Namespaced, container: bootstrap.Container) -> None:
    rid = fresh_rid()
    expires = record(container, ws=own.ns, replay_id=rid, retention=timedelta(seconds=1))
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.05)
    gone = {"code": "AGENT_REPLAY_EXPIRED",
            "message": f"replay {rid} expired at {format_timestamp(expires)}"}
    for body in ({"mode": "verify"}, {"mode": "recompute"}, {"mode": "recompute", "task": "x"}):
        resp = agent.post(f"{REPLAYS}/{rid}", body)
        assert (resp.status_code, resp.json()) == (410, gone)


def test_recompute_checks_the_task_then_the_bound_set(own: Namespaced,
                                                      container: bootstrap.Container) -> None:
    create_set(own, "finance")
    create_set(own, "legal")
    rid = fresh_rid()
    record(container, ws=own.ns, replay_id=rid, set_id="legal")
    unbound = Agent(own, token(own))
    bound = Agent(own, token(own, context_set_id="finance"))
    path = f"{REPLAYS}/{rid}"
    for agent in (unbound, bound):
        assert violations(agent.post(path, {"mode": "recompute"})) == [
            {"path": "$.task", "message": "is required for mode recompute"}]
        resp = agent.post(path, {"mode": "recompute", "task": TASK + " "})
        assert (resp.status_code, resp.json()) == (409, {
            "code": "AGENT_REPLAY_TASK_MISMATCH",
            "message": "task does not match the recorded task hash"})
    resp = bound.post(path, {"mode": "recompute", "task": TASK})
    assert (resp.status_code, resp.json()) == (403, {
        "code": "FORBIDDEN", "message": 'agent credential is bound to context set "finance"'})


def test_a_release_is_recorded_once_per_replay_id(container: bootstrap.Container) -> None:
    ws, rid = fresh("acme"), fresh_rid()
    first = record(container, ws=ws, replay_id=rid, retention=timedelta(hours=1))
    again = container.context_packs.execute(
        ws, rid, ReleasePack(release=released(rid), retention=timedelta(seconds=5)))
    assert again.position == 0 and again.state.release is not None
    assert again.state.release.expires_at == first
    assert [r.name for r in container.store.load(
        container.context_packs.stream(ws, rid))] == ["ContextPackReleased"]
