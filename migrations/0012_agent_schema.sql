-- The schema templates read (agent-context-api 11.3, 11.5).
--
-- agent_data: base tables. ``collections``, ``documents`` and ``passages`` are written by the
--   agent_data projection (query-index worker, rebuildable) with the columns of 11.3: the
--   current usable index of each live memory or knowledge context. ``fields`` belongs to the
--   studied-fields projection (created here too when it does not exist yet). ``scopes`` holds the
--   per-run scope rows (not a projection: nothing in it must survive a restart).
-- agent: the four views, owned by the service's login, ``security_barrier``, each row joined on
--   the scope row whose token equals the session's ``cs.agent_scope`` and has not expired. The
--   restricted login is granted SELECT on these views and nothing else (the sandbox step of
--   ``context-service migrate``).
CREATE SCHEMA IF NOT EXISTS agent_data;
CREATE SCHEMA IF NOT EXISTS agent;

CREATE TABLE IF NOT EXISTS agent_data.collections (
    stream_id     uuid    PRIMARY KEY,
    namespace     bytea   NOT NULL,
    collection_id text    COLLATE "C" NOT NULL,
    type          text    NOT NULL,
    revision      text    NOT NULL,
    publication   bigint  NOT NULL,
    usable        boolean NOT NULL,
    documents     integer NOT NULL,
    passages      integer NOT NULL
);
CREATE INDEX IF NOT EXISTS agent_data_collections_namespace
    ON agent_data.collections (namespace, collection_id);

CREATE TABLE IF NOT EXISTS agent_data.documents (
    publication   bigint  NOT NULL,
    collection_id text    COLLATE "C" NOT NULL,
    document_id   text    COLLATE "C" NOT NULL,
    file          text,
    passages      integer NOT NULL,
    tokens        integer NOT NULL,
    PRIMARY KEY (publication, document_id)
);

CREATE TABLE IF NOT EXISTS agent_data.passages (
    publication   bigint  NOT NULL,
    ordinal       integer NOT NULL,
    collection_id text    COLLATE "C" NOT NULL,
    document_id   text    COLLATE "C" NOT NULL,
    record_id     text    COLLATE "C" NOT NULL,
    title         text,
    text          text    NOT NULL,
    keywords      text[]  NOT NULL,
    valid_from    timestamptz,
    valid_to      timestamptz,
    supersedes    text[]  NOT NULL,
    fact_key      text,
    tokens        integer NOT NULL,
    PRIMARY KEY (publication, ordinal)
);

CREATE TABLE IF NOT EXISTS agent_data.fields (
    publication    bigint  NOT NULL,
    collection_id  text    COLLATE "C" NOT NULL,
    document_id    text    COLLATE "C" NOT NULL,
    record_id      text    COLLATE "C" NOT NULL,
    name           text    NOT NULL,
    type           text    NOT NULL,
    number_value   double precision,
    money_amount   numeric,
    money_currency text,
    date_value     date,
    boolean_value  boolean,
    text_value     text,
    span_start     integer,
    span_end       integer
);
CREATE INDEX IF NOT EXISTS agent_data_fields_publication ON agent_data.fields (publication);

CREATE TABLE IF NOT EXISTS agent_data.scopes (
    token       text        PRIMARY KEY,
    namespace   bytea       NOT NULL,
    collections text[]      NOT NULL,
    expires_at  timestamptz NOT NULL
);

-- The scope of the session: at most one row, and none unless the token is known and live.
CREATE OR REPLACE VIEW agent_data.run_collections WITH (security_barrier) AS
SELECT c.collection_id, c.type, c.revision, c.documents, c.passages, c.publication
  FROM agent_data.scopes s
  JOIN agent_data.collections c
    ON c.namespace = s.namespace AND c.collection_id = ANY (s.collections) AND c.usable
 WHERE s.token = current_setting('cs.agent_scope', true) AND s.expires_at > now();

CREATE OR REPLACE VIEW agent.collections WITH (security_barrier) AS
SELECT r.collection_id, r.type, r.revision, r.documents, r.passages
  FROM agent_data.run_collections r;

CREATE OR REPLACE VIEW agent.documents WITH (security_barrier) AS
SELECT d.collection_id, d.document_id, d.file, d.passages, d.tokens
  FROM agent_data.run_collections r
  JOIN agent_data.documents d ON d.publication = r.publication;

CREATE OR REPLACE VIEW agent.passages WITH (security_barrier) AS
SELECT p.collection_id, p.document_id, p.record_id, p.ordinal, p.title, p.text, p.keywords,
       p.valid_from, p.valid_to, p.supersedes, p.fact_key, p.tokens
  FROM agent_data.run_collections r
  JOIN agent_data.passages p ON p.publication = r.publication;

CREATE OR REPLACE VIEW agent.fields WITH (security_barrier) AS
SELECT f.collection_id, f.document_id, f.record_id, f.name, f.type, f.number_value,
       f.money_amount, f.money_currency, f.date_value, f.boolean_value, f.text_value,
       f.span_start, f.span_end
  FROM agent_data.run_collections r
  JOIN agent_data.fields f ON f.publication = r.publication;

-- query_templates projection: every template's status and current version, one document per
-- template stream (namespace as UTF-8 bytes, document as JSON text, as context_sets).
CREATE TABLE IF NOT EXISTS query_templates (
    stream_id uuid    PRIMARY KEY,
    namespace bytea   NOT NULL,
    id        text    COLLATE "C" NOT NULL,
    retired   boolean NOT NULL,
    doc       text    NOT NULL
);
CREATE INDEX IF NOT EXISTS query_templates_namespace ON query_templates (namespace, id);
