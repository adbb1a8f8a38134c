-- What packs read (agent-context-api 7.3-7.6, 12.5). Every table is a rebuildable projection.
--
-- passage_features (query-index worker): the token count and, for embedded texts, the unit
--   vector of every text ever published (record texts, embedded texts, document texts), keyed
--   by the SHA-256 of the text's UTF-8 bytes. Kept forever, so a pack at an old position finds
--   the features of the index it reads. ``embedding`` is NULL for a text never embedded, or one
--   without tokens.
-- agent_collections / agent_passages / agent_documents (query-index worker): the latest index
--   of each live memory or knowledge context as packs read it: the first record per id, with
--   its embedding copied onto the row (the vector scan reads one table, no join), and the
--   documents with their token counts. ``usable``: published for the current revision.
-- pack_inputs (projections worker): one small row per pack-input event (7.3): the namespace,
--   the log position, the recorded time and the event without index records.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS passage_features (
    hash      bytea   PRIMARY KEY,
    tokens    integer NOT NULL,
    embedding vector(256)
);

CREATE TABLE IF NOT EXISTS agent_collections (
    stream_id        uuid    PRIMARY KEY,
    namespace        bytea   NOT NULL,
    name             text    COLLATE "C" NOT NULL,
    type             text    NOT NULL,
    current_revision text    NOT NULL,
    index_revision   text    NOT NULL,
    publication      bigint  NOT NULL,
    usable           boolean NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_collections_namespace ON agent_collections (namespace, name);

-- Ids are kept as UTF-8 bytes: a record id may hold any JSON string (NUL included), and bytea
-- order is code-point order.
CREATE TABLE IF NOT EXISTS agent_passages (
    publication bigint  NOT NULL,
    ord         integer NOT NULL,
    collection  text    COLLATE "C" NOT NULL,
    record_id   bytea   NOT NULL,
    document_id bytea   NOT NULL,
    text_hash   bytea   NOT NULL,
    tokens      integer NOT NULL,
    valid_from  timestamptz,
    valid_to    timestamptz,
    fact_key    bytea   NOT NULL,
    embedding   vector(256),
    PRIMARY KEY (publication, ord)
);

CREATE TABLE IF NOT EXISTS agent_documents (
    publication bigint  NOT NULL,
    document_id bytea   NOT NULL,
    text_hash   bytea   NOT NULL,
    tokens      integer NOT NULL,
    passages    integer NOT NULL,
    PRIMARY KEY (publication, document_id)
);

CREATE TABLE IF NOT EXISTS pack_inputs (
    namespace   bytea       NOT NULL,
    position    bigint      NOT NULL,
    recorded_at timestamptz NOT NULL,
    kind        text        NOT NULL,
    key         text        NOT NULL,
    name        text        NOT NULL,
    event       text        NOT NULL,
    PRIMARY KEY (namespace, position)
);
CREATE INDEX IF NOT EXISTS pack_inputs_time ON pack_inputs (namespace, recorded_at, position);
