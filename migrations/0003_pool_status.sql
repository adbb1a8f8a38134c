-- Sandbox pools as last recorded: one document per pool stream (rebuildable).
CREATE TABLE IF NOT EXISTS pool_status (
    name text PRIMARY KEY,
    live boolean NOT NULL,
    doc  jsonb   NOT NULL
);
