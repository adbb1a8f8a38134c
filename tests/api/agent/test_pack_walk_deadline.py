"""The latency budget holds through deduplication (agent-context-api.md §7.5, §7.8, §7.10):
passages crafted so that every pair must be compared in full (each holds one 1,500-word block
all of them share, and 400 words of its own, so none is a near duplicate of another) no longer
keep a pack busy for seconds: it answers within its ``maxLatencyMs`` and says in ``missing``
what deduplication left unchecked."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from context_service.config import Settings
from tests.api.agent.packs_support import PACKS, Agent, create_context, publish, record
from tests.api.conftest import Api
from tests.api.sets_support import seed_workspace, token

pytestmark = pytest.mark.postgres
CONTEXTS, PER_CONTEXT = 4, 50  # 200 passages; an index of 50 stays under the body limit
SHARED = " ".join(f"blk{i}" for i in range(1500))
REVISION = "5" * 64


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """The pack suite's settings, with time for the views to index 380,000 words."""
    return Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                    workers=("projections", "query-index"), agent_rate_per_second=0,
                    read_wait_seconds=300)


def crafted(context: int) -> list[dict[str, Any]]:
    name = f"crafted-{context}"
    return [record(f"p{i:02d}", name, REVISION,
                   f"{SHARED} " + " ".join(f"own{context}x{i}x{j}" for j in range(400)))
            for i in range(PER_CONTEXT)]


def timed(agent: Agent, body: dict[str, Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    resp = agent.post(PACKS, body)
    took = time.perf_counter() - started
    assert resp.status_code == 200, resp.text
    return took, resp.json()


def test_crafted_passages_do_not_stretch_a_pack_past_its_latency_budget(api: Api) -> None:
    seed_workspace(api)
    for c in range(CONTEXTS):
        create_context(api, f"crafted-{c}")
        publish(api, f"crafted-{c}", REVISION, crafted(c))
    agent = Agent(api, token(api))
    budget = {"maxTokens": 4000, "maxLatencyMs": 1000}

    def pack(task: str) -> tuple[float, Any]:
        return timed(agent, {"task": task, "budget": budget, "retrieval": "lexical",
                             "asOf": {"validTime": "2025-01-01T00:00:00Z"}})

    pack("nothing matches this")  # loads the corpora: not what is measured
    trivial, empty = pack("nothing matches this either")
    assert empty["items"] == [] and empty["missing"] == []
    took, body = pack("blk7 blk8 blk9")
    # every passage is a candidate; comparing them all would take seconds
    assert body["omitted"]["duplicate"]["count"] == 0
    # the walk's share of work is spent long before every pair is compared; on a slow
    # machine the deadline may pass first (graph facts and documents are then skipped too)
    capped = {"kind": "deduplication", "reason": "comparisons_capped"}
    cut = {"kind": "deadline", "reason": "deduplication_cut_short"}
    assert capped in body["missing"] or cut in body["missing"], body["missing"]
    assert all(m in (capped, cut, {"kind": "deadline", "reason": "retrieval_cut_short"})
               for m in body["missing"])
    # what was retrieved is still packed: every passage is offered (each is longer than the
    # budget, so each is skipped)
    assert body["complete"] is False and body["omitted"]["budget"]["count"] == 200
    assert took < 1.5 * budget["maxLatencyMs"] / 1000 + trivial, (took, trivial, body["missing"])
