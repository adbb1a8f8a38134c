"""SIGKILL of ``serve`` in the middle of a write burst from 16 clients, at random moments, again
and again: after each restart every acknowledged write is in the log exactly once, no refused
write is, and every view equals a rebuild of the log from position zero."""

from __future__ import annotations

import os
import random
import time

import httpx
import pytest

from context_service import bootstrap
from tests.e2e.server import ServerProcess
from tests.faults.burst import SUBJECT, Burst, Write, check_log, context_body, log_markers
from tests.faults.conftest import Rebuild, caught_up
from tests.support.hypothesis_profiles import scaled
from tests.support.views import differences, snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.postgres, pytest.mark.slow]
# each kill costs a restart of the service (its start dominates the test): three random moments,
# the last two on a log that earlier crashes left, prove the recovery holds again and again; the
# thorough profile kills twenty times as often
KILLS = scaled(3)
SHARED = [f"shared-{i}" for i in range(4)]


def test_sigkill_mid_burst(serve: ServerProcess, inspector: bootstrap.Container,
                           rebuilt: Rebuild) -> None:
    seed = int(os.environ.get("CS_FAULT_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    writes: list[Write] = []
    serve.start()
    with httpx.Client(base_url=serve.url, headers=SUBJECT) as http:
        for name in SHARED:
            assert http.post("/v1/contexts", json=context_body(name)).status_code == 201
    for kill in range(KILLS):
        burst = Burst(serve.url, f"k{kill}", SHARED, clients=16, seed=seed).start()
        deadline = time.monotonic() + 20
        while burst.acknowledged() < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.6))  # a random moment of the burst
        serve.kill()
        burst.stop()
        writes += burst.writes
        assert sum(w.acknowledged for w in burst.writes) >= 20, f"seed {seed}: burst too small"

        serve.start()
        caught_up(inspector)
        problems = check_log(writes, log_markers(inspector.store))
        assert problems == [], f"seed {seed}, kill {kill}: {problems[:5]}"
        live = snapshot(inspector)
        assert live["context_catalog"]
        assert differences(live, rebuilt(inspector)) == {}, f"seed {seed}, kill {kill}"
    print(f"seed {seed}: {len(writes)} writes, {sum(w.acknowledged for w in writes)} "
          f"acknowledged, {sum(w.status is None for w in writes)} unanswered")
