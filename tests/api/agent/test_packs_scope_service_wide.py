"""Packs under the deadline and at release on a service of the test's own (agent-context-api.md
§7.5, §7.9, §7.13): the latency deadline cutting retrieval short and a credential revoked before
release (both with the pack ports changed for the test), and the NATS stream carrying hashes and
identities only. The other scope tests share one service (test_packs_scope.py)."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest

from context_service import bootstrap
from context_service.adapters.nats.stream import StreamSpec
from tests.api.agent.packs_corpus import TASK, pack_body, seed_corpus
from tests.api.agent.packs_support import PACKS, Agent, HookedRetrieval, pack_services
from tests.api.agent.packs_support import settings as settings  # the fixture
from tests.api.conftest import Api
from tests.api.sets_support import CREDENTIALS, token
from tests.support.nats_fixtures import NatsServerHandle, relay_log

pytestmark = pytest.mark.postgres


@pytest.fixture
def corpus(api: Api) -> Api:
    seed_corpus(api)
    return api


def with_hook(api: Api, before: Any, body: dict[str, Any], agent: Agent) -> Any:
    packs = pack_services(api)
    assert packs.ports is not None
    original = packs.ports
    packs.ports = replace(original, retrieval=HookedRetrieval(original.retrieval, before))
    try:
        return agent.post(PACKS, body)
    finally:
        packs.ports = original


def test_the_deadline_cuts_retrieval_short(corpus: Api) -> None:
    agent = Agent(corpus, token(corpus))
    resp = with_hook(corpus, lambda: time.sleep(1.05),
                     pack_body(budget={"maxTokens": 2000, "maxLatencyMs": 1000}), agent)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["missing"] == [{"kind": "deadline", "reason": "retrieval_cut_short"}]
    assert body["complete"] is False


def test_a_credential_revoked_before_release_is_refused_and_nothing_recorded(
        corpus: Api, container: bootstrap.Container) -> None:
    value = token(corpus)
    agent = Agent(corpus, value)
    head = container.store.head()
    revoke_path = f"{CREDENTIALS}/{value.split('_')[1]}"

    def revoke() -> None:
        assert corpus.as_("user:alice").delete(revoke_path).status_code == 204

    resp = with_hook(corpus, revoke, pack_body(), agent)
    assert (resp.status_code, resp.json()) == (401, {"code": "UNAUTHORIZED",
                                                     "message": "agent credential is not valid"})
    names = [r.name for r in container.store.read(head, 100)]
    assert "ContextPackReleased" not in names


@pytest.mark.nats
def test_nats_carries_hashes_and_identities_only(
        corpus: Api, container: bootstrap.Container, nats_server: NatsServerHandle,
        nats_stream: StreamSpec) -> None:
    agent = Agent(corpus, token(corpus))
    body = agent.pack(pack_body()).json()
    resp = agent.post(f"/api/agent/v1/replays/{body['replayId']}",
                      {"mode": "recompute", "task": TASK})
    assert resp.status_code == 200, resp.text
    published = [m for m in relay_log(container.store, nats_server.url, nats_stream)
                 if ".context_pack." in m.subject]
    assert [m.subject.rsplit(".", 1)[1] for m in published] == ["ContextPackReleased",
                                                                "ContextPackReplayed"]
    assert published[0].subject == f"{nats_stream.subject_prefix}.acme.context_pack." \
                                   "ContextPackReleased"
    data = json.loads(published[0].payload)["data"]
    assert data["replay_id"] == body["replayId"] and data["pack_id"] == body["packId"]
    payloads = b"\n".join(m.payload for m in published)
    for text in [TASK, *(i["text"] for i in body["items"])]:
        assert json.dumps(text)[1:-1].encode() not in payloads
