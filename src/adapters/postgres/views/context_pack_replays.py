"""SQL of the context_pack_replays view: the projection's writes and the replay routes' reads."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import msgspec
from eventsourcing.postgres import PostgresDatastore

from context_service.domain.context_pack.events import ContextPackReleased, ContextPackReplayed
from context_service.domain.context_pack.state import replay_stream
from context_service.projections.context_pack_replays.view import ReplayRecord, ReplayRun

_enc = msgspec.json.Encoder()
_release = msgspec.json.Decoder(ContextPackReleased)


class ReplaySql:
    def __init__(self, cur: Any) -> None:
        self.cur = cur

    def add_releases(self, rows: list[tuple[uuid.UUID, str, int, ContextPackReleased]]) -> None:
        self.cur.execute(
            "INSERT INTO context_pack_replays"
            " (stream_id, namespace, replay_id, position, expires_at, release)"
            " SELECT a, b, c, d, e, f FROM unnest(%b::uuid[], %b::bytea[], %b::text[],"
            " %b::bigint[], %b::timestamptz[], %b::text[]) AS t(a, b, c, d, e, f)"
            " ON CONFLICT (stream_id) DO NOTHING",
            ([sid for sid, _, _, _ in rows], [ws.encode() for _, ws, _, _ in rows],
             [ev.replay_id for _, _, _, ev in rows], [pos for _, _, pos, _ in rows],
             [ev.expires_at for _, _, _, ev in rows],
             [_enc.encode(ev).decode() for _, _, _, ev in rows]))

    def add_runs(self, runs: Iterable[ReplayRun]) -> None:
        listed = list(runs)
        self.cur.execute(
            "INSERT INTO context_pack_runs (position, stream_id, mode, run)"
            " SELECT a, b, c, d FROM unnest(%b::bigint[], %b::uuid[], %b::text[], %b::text[])"
            " AS t(a, b, c, d) ON CONFLICT (position) DO NOTHING",
            ([r.position for r in listed], [r.stream_id for r in listed],
             [r.run.mode for r in listed], [_run_doc(r.run) for r in listed]))
        counts: dict[uuid.UUID, int] = {}
        for r in listed:
            counts[r.stream_id] = counts.get(r.stream_id, 0) + 1
        self.cur.execute(
            "UPDATE context_pack_replays r SET runs = r.runs + t.n"
            " FROM unnest(%b::uuid[], %b::int[]) AS t(s, n) WHERE r.stream_id = t.s",
            (list(counts), list(counts.values())))


def _run_doc(run: ContextPackReplayed) -> str:
    return _enc.encode(run).decode()


class ReplayReadsSql:
    """The read port over the tables above."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def get(self, workspace: str, replay_id: str) -> ReplayRecord | None:
        with self.datastore.transaction(commit=False) as cur:
            cur.execute("SELECT position, runs, release FROM context_pack_replays"
                        " WHERE stream_id = %s", (replay_stream(workspace, replay_id).id,))
            row = cur.fetchone()
        if row is None:
            return None
        return ReplayRecord(workspace, _release.decode(row["release"]), row["position"],
                            row["runs"])
