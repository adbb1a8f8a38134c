"""A pack waits for an index's corpus as it waits for a view (agent-context-api.md §1.7): after
a start or a publication the corpus of an index may still be loading; a pack waits for it no
longer than the read wait, then answers ``503`` with ``Retry-After``, and the load goes on, so
a later pack is answered from it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from context_service.adapters.pack.corpus import CorpusLoader
from context_service.config import Settings
from context_service.domain.pack.model import CollectionAt
from tests.api.agent.packs_support import PACKS, create_context, publish, record
from tests.api.conftest import Api
from tests.api.sets_support import seed_workspace, token

pytestmark = pytest.mark.postgres
REVISION = "6" * 64
READ_WAIT = 2.0


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(data_dir=tmp_path, sandbox_image="busybox:1.36", kube_mode="off",
                    workers=("projections", "query-index"), agent_rate_per_second=0,
                    read_wait_seconds=READ_WAIT)


class Gate:
    def __init__(self) -> None:
        self.opened = threading.Event()
        self.entered = threading.Event()  # a load began (the warmer's, of a current index)


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    """Every corpus load of this process (the warmer's too) holds on until the gate opens."""
    held_loads = Gate()
    real = CorpusLoader._load

    def held(self: CorpusLoader, collection: CollectionAt) -> object:
        held_loads.entered.set()
        held_loads.opened.wait(60)
        return real(self, collection)

    monkeypatch.setattr(CorpusLoader, "_load", held)
    yield held_loads
    held_loads.opened.set()


def test_a_pack_waits_for_a_loading_corpus_no_longer_than_the_read_wait(
        api: Api, gate: Gate) -> None:
    seed_workspace(api)
    create_context(api, "minutes")
    publish(api, "minutes", REVISION,
            [record("p1", "minutes", REVISION, "The board appointed Priya as CFO in Lisbon.")])
    bearer = {"Authorization": f"Bearer {token(api)}"}  # a 503 is what is tested

    def pack() -> Any:
        return api.post(PACKS, body, headers=bearer)

    body = {"task": "Who is the CFO?", "budget": {"maxTokens": 2000, "maxLatencyMs": 60000},
            "asOf": {"validTime": "2026-06-01T00:00:00Z"}}
    assert gate.entered.wait(30)  # the warmer is loading the new index (held)
    started = time.monotonic()
    resp = pack()
    waited = time.monotonic() - started
    assert resp.status_code == 503, resp.text
    assert resp.headers["Retry-After"] == "1"
    assert resp.json() == {"code": "SERVICE_UNAVAILABLE",
                           "message": "the service could not catch up with the log in time"}
    assert READ_WAIT <= waited < READ_WAIT + 10  # the read wait, not the 60 s deadline
    gate.opened.set()  # the load goes on; a later pack is answered from it
    for _ in range(100):
        resp = pack()
        if resp.status_code != 503:
            break
        time.sleep(0.1)
    assert resp.status_code == 200, resp.text
    assert [i["source"]["recordId"] for i in resp.json()["items"]] == ["p1"]
