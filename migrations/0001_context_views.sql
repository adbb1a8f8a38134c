-- Read models of named contexts. Every table here is a projection of the event log and can be
-- truncated and rebuilt from position zero (context-service projections rebuild).

CREATE TABLE IF NOT EXISTS context_catalog (
    stream_id        uuid PRIMARY KEY,
    namespace        text    NOT NULL,
    name             text    NOT NULL,
    live             boolean NOT NULL,
    created_position bigint  NOT NULL,
    doc              jsonb   NOT NULL
);
CREATE INDEX IF NOT EXISTS context_catalog_live ON context_catalog (namespace, name) WHERE live;

CREATE TABLE IF NOT EXISTS context_grants (
    stream_id uuid NOT NULL,
    subject   text NOT NULL,
    PRIMARY KEY (stream_id, subject)
);
CREATE INDEX IF NOT EXISTS context_grants_subject ON context_grants (subject);

CREATE TABLE IF NOT EXISTS revision_history (
    stream_id uuid    NOT NULL,
    position  bigint  NOT NULL,
    seq       integer NOT NULL DEFAULT 0,  -- several revisions from one (adoption) event
    doc       jsonb   NOT NULL,
    PRIMARY KEY (stream_id, position, seq)
);

CREATE TABLE IF NOT EXISTS audit_log (
    stream_id uuid        NOT NULL,
    position  bigint      NOT NULL,
    time      timestamptz NOT NULL,
    action    text        NOT NULL,
    subject   jsonb       NOT NULL,
    target    jsonb,
    seq       integer     NOT NULL DEFAULT 0,  -- several entries from one (adoption) event
    PRIMARY KEY (stream_id, position, seq)
);
