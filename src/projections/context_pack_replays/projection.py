"""context_pack_replays: the release record of each replay id and its runs (spec §12.5)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from context_service.domain.context_pack.events import ContextPackReleased, ContextPackReplayed
from context_service.domain.context_pack.state import KIND
from context_service.domain.stream import Recorded
from context_service.projections.context_pack_replays.view import ReplayRun, ReplayView


class ContextPackReplays:
    name: str = "context_pack_replays"
    tables: tuple[str, ...] = ("context_pack_runs", "context_pack_replays")

    def apply(self, view: ReplayView, batch: Sequence[Recorded]) -> None:
        releases: list[tuple[uuid.UUID, str, int, ContextPackReleased]] = []
        runs: list[ReplayRun] = []
        for recorded in batch:
            if recorded.stream.kind != KIND:
                continue
            event = recorded.event
            if isinstance(event, ContextPackReleased):
                releases.append((recorded.stream.id, recorded.stream.namespace,
                                 recorded.position, event))
            elif isinstance(event, ContextPackReplayed):
                runs.append(ReplayRun(recorded.stream.id, recorded.position, event))
        if releases:
            view.add_releases(releases)
        if runs:
            view.add_runs(runs)
