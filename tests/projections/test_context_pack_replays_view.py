"""The context_pack_replays view: each release by workspace and replay id with the position
it was recorded at and its runs counted; rebuilt from zero it equals the view built live."""

from __future__ import annotations

from datetime import timedelta

import msgspec
import pytest

from context_service.adapters.postgres.views.context_pack_replays import ReplayReadsSql
from context_service.bootstrap import Container
from context_service.domain.context_pack.commands import RecordReplay, ReleasePack
from context_service.domain.context_pack.events import ContextPackReplayed
from tests.api.agent.test_replays_rules import released
from tests.support.views import snapshot

pytestmark = pytest.mark.postgres


def _run(replay_id: str) -> ContextPackReplayed:
    base = released(replay_id)
    return ContextPackReplayed(at=base.at, actor="user:alice", replay_id=replay_id,
                               mode="verify", credential_id="0123456789abcdef",
                               created_by="user:alice", position=3,
                               engine_version="pack-engine/1", unchanged=0, changed=0,
                               unavailable=0, added=0, removed=0, merkle_root=base.merkle_root)


def test_releases_and_runs_by_workspace_equal_a_rebuild(container: Container) -> None:
    packs = container.context_packs
    positions = {}
    for ws in ("acme", "other"):
        for n in range(3):
            rid = f"rp_{ws}{n}"
            outcome = packs.execute(ws, rid, ReleasePack(release=released(rid),
                                                         retention=timedelta(hours=1)))
            positions[ws, rid] = outcome.position
            for _ in range(n):
                packs.execute(ws, rid, RecordReplay(run=_run(rid)))
    runner = container.runner("context_pack_replays")
    assert runner.wait_for(container.store.head(), timeout=30)
    reads = ReplayReadsSql(container.datastore)
    for (ws, rid), position in positions.items():
        found = reads.get(ws, rid)
        assert found is not None and found.position == position
        assert found.runs == int(rid[-1]) and found.release.replay_id == rid
        assert msgspec.json.encode(found.release) == msgspec.json.encode(
            packs.load(ws, rid)[1].release)
    assert reads.get("other", "rp_acme0") is None and reads.get("acme", "rp_nope") is None
    live = snapshot(container)
    assert len(live["context_pack_replays"]) == 6 and len(live["context_pack_runs"]) == 6
    for each in container.runners.values():
        each.stop()
        each.rebuild()
    assert snapshot(container) == live
