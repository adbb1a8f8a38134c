-- Agent access: workspace members and agent credentials (projections, rebuildable), and the
-- service's own secrets (neither an event nor a projection: never exported, kept by rebuilds).
-- Namespaces and subjects are kept as their UTF-8 bytes and documents as JSON text: a path
-- segment or a subject name may hold any character, NUL included, which text and jsonb refuse.

CREATE TABLE IF NOT EXISTS workspace_members (
    namespace bytea       NOT NULL,
    subject   bytea       NOT NULL,  -- kind:name; byte order is code-point order
    role      text        NOT NULL,
    doc       text        NOT NULL,  -- the member as JSON
    PRIMARY KEY (namespace, subject)
);

CREATE TABLE IF NOT EXISTS agent_credentials (
    id         text        PRIMARY KEY,
    namespace  bytea       NOT NULL,
    created_at timestamptz NOT NULL,
    doc        text        NOT NULL  -- the credential as the aggregate folds it, with secret_hash
);
CREATE INDEX IF NOT EXISTS agent_credentials_workspace
    ON agent_credentials (namespace, created_at DESC, id);

CREATE TABLE IF NOT EXISTS service_secrets (
    name       text        PRIMARY KEY,
    value      bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
