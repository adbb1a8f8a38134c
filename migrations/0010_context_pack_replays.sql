-- Released packs by replay id, and their replay runs (context_pack_replays projection,
-- rebuildable). The workspace is kept as its UTF-8 bytes and the release as JSON text, as the
-- context_sets view does; expires_at is a column so expiry needs no decoding.
CREATE TABLE IF NOT EXISTS context_pack_replays (
    stream_id  uuid PRIMARY KEY,
    namespace  bytea       NOT NULL,
    replay_id  text        COLLATE "C" NOT NULL,
    position   bigint      NOT NULL,
    expires_at timestamptz NOT NULL,
    runs       integer     NOT NULL DEFAULT 0,
    release    text        NOT NULL
);
CREATE TABLE IF NOT EXISTS context_pack_runs (
    position  bigint PRIMARY KEY,
    stream_id uuid   NOT NULL,
    mode      text   NOT NULL,
    run       text   NOT NULL
);
CREATE INDEX IF NOT EXISTS context_pack_runs_stream ON context_pack_runs (stream_id, position);
