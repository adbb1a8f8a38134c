-- Collection admission (agent-context-api §3.4 rule 5; collection_admission projection,
-- rebuildable): which collections may reach agents. A new projection, so it builds from
-- position zero on the first start after this migration; until it reaches a context's
-- creation, that context is left out of what agents read (never let in early).
--
-- collection_admission_members: the workspaces' members as this projection folds them (its
-- own record, so the view depends on the log alone); namespaces and subjects as UTF-8 bytes.
CREATE TABLE IF NOT EXISTS collection_admission_members (
    namespace bytea NOT NULL,
    subject   bytea NOT NULL,
    PRIMARY KEY (namespace, subject)
);

-- collection_origins: each live context's current creation (its position, as the catalog's
-- created_position) and whether its creator held a role in the workspace then.
CREATE TABLE IF NOT EXISTS collection_origins (
    namespace        text    NOT NULL,
    name             text    NOT NULL,
    created_position bigint  NOT NULL,
    member_created   boolean NOT NULL,
    PRIMARY KEY (namespace, name)
);

-- collection_admission_sets: the version in force of every active context set (archived sets
-- admit nothing) and the position where it was recorded.
CREATE TABLE IF NOT EXISTS collection_admission_sets (
    namespace   bytea  NOT NULL,
    set_id      text   COLLATE "C" NOT NULL,
    position    bigint NOT NULL,
    collections text[] NOT NULL,
    PRIMARY KEY (namespace, set_id)
);
