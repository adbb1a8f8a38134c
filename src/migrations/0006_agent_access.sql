-- Agent access: workspace members and agent credentials (projections, rebuildable), and the
-- service's own secrets (neither an event nor a projection: never exported, kept by rebuilds).

CREATE TABLE IF NOT EXISTS workspace_members (
    namespace text        NOT NULL,
    subject   text        NOT NULL,  -- kind:name
    kind      text        NOT NULL,
    name      text        NOT NULL,
    role      text        NOT NULL,
    since     timestamptz NOT NULL,
    PRIMARY KEY (namespace, subject)
);

CREATE TABLE IF NOT EXISTS agent_credentials (
    id         text        PRIMARY KEY,
    namespace  text        NOT NULL,
    created_at timestamptz NOT NULL,
    doc        jsonb       NOT NULL  -- the credential as the aggregate folds it, with secret_hash
);
CREATE INDEX IF NOT EXISTS agent_credentials_workspace
    ON agent_credentials (namespace, created_at DESC, id);

CREATE TABLE IF NOT EXISTS service_secrets (
    name       text        PRIMARY KEY,
    value      bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
