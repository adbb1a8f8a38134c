-- Context sets as last recorded: one document per set stream (context_sets projection,
-- rebuildable). The namespace is kept as its UTF-8 bytes (a path segment may hold any character,
-- NUL included, which text cannot); the document is JSON text for the same reason (jsonb
-- refuses \u0000 inside strings).
CREATE TABLE IF NOT EXISTS context_sets (
    stream_id uuid PRIMARY KEY,
    namespace bytea   NOT NULL,
    id        text    COLLATE "C" NOT NULL,
    archived  boolean NOT NULL,
    doc       text    NOT NULL
);
CREATE INDEX IF NOT EXISTS context_sets_namespace ON context_sets (namespace, id);
