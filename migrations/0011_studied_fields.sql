-- Studied fields (agent-context-api 10, 11.3, 12.5): a rebuildable projection kept by the
-- query-index worker.
--
-- agent_data.field_collections: each live memory or knowledge context with the position of its
--   latest index publication and whether that index is usable (published for the current
--   revision).
-- agent_data.fields: the fields of the records (first record per id) of every current usable
--   index, one row per (record, field). The columns of the agent.fields view come first, with
--   the types 11.3 gives them; text columns hold the value with any NUL or lone surrogate
--   replaced by U+FFFD (PostgreSQL text cannot hold them), the *_key columns the exact UTF-8
--   bytes the API compares and orders by (bytea order is code-point order). ``stating``: this
--   record is the first of its document (publish order) carrying the field, so its value is the
--   document's. ``quote``: the exact text the span covered in this record; ``money_text``: the
--   amount as written.
-- agent_data.field_documents: every document of those indexes (a document need not state any
--   field; it still counts in coverage and matches ``exists: false``).
-- agent_data.field_names: per index, each field name with its type, the documents stating it
--   and, for money, its currencies.

CREATE SCHEMA IF NOT EXISTS agent_data;

CREATE TABLE IF NOT EXISTS agent_data.field_collections (
    stream_id        uuid    PRIMARY KEY,
    namespace        bytea   NOT NULL,
    name             text    COLLATE "C" NOT NULL,
    type             text    NOT NULL,
    current_revision text    NOT NULL,
    index_revision   text    NOT NULL,
    publication      bigint  NOT NULL,
    usable           boolean NOT NULL,
    documents        integer NOT NULL
);
CREATE INDEX IF NOT EXISTS field_collections_namespace
    ON agent_data.field_collections (namespace, name);

CREATE TABLE IF NOT EXISTS agent_data.fields (
    collection_id  text             COLLATE "C" NOT NULL,
    document_id    text             COLLATE "C" NOT NULL,
    record_id      text             COLLATE "C" NOT NULL,
    name           text             COLLATE "C" NOT NULL,
    type           text             NOT NULL,
    number_value   double precision,
    money_amount   numeric,
    money_currency text             COLLATE "C",
    date_value     date,
    boolean_value  boolean,
    text_value     text             COLLATE "C",
    span_start     integer,
    span_end       integer,
    namespace      bytea            NOT NULL,
    publication    bigint           NOT NULL,
    ord            integer          NOT NULL,
    document_key   bytea            NOT NULL,
    record_key     bytea            NOT NULL,
    text_key       bytea,
    text_lower     bytea,
    money_text     text,
    quote          bytea,
    stating        boolean          NOT NULL,
    PRIMARY KEY (publication, ord, name)
);

CREATE TABLE IF NOT EXISTS agent_data.field_documents (
    publication  bigint NOT NULL,
    document_key bytea  NOT NULL,
    PRIMARY KEY (publication, document_key)
);

CREATE TABLE IF NOT EXISTS agent_data.field_names (
    publication bigint NOT NULL,
    name        text   COLLATE "C" NOT NULL,
    type        text   NOT NULL,
    documents   integer NOT NULL,
    currencies  text[] NOT NULL,
    PRIMARY KEY (publication, name)
);

-- The plans of 10.4 read one publication's stating rows of a few field names: by document, and
-- per typed column for filters and sorts.
CREATE INDEX IF NOT EXISTS fields_document
    ON agent_data.fields (publication, name, document_key) WHERE stating;
CREATE INDEX IF NOT EXISTS fields_number
    ON agent_data.fields (publication, name, number_value) WHERE stating AND type = 'number';
CREATE INDEX IF NOT EXISTS fields_money
    ON agent_data.fields (publication, name, money_currency, money_amount)
    WHERE stating AND type = 'money';
CREATE INDEX IF NOT EXISTS fields_date
    ON agent_data.fields (publication, name, date_value) WHERE stating AND type = 'date';
CREATE INDEX IF NOT EXISTS fields_text
    ON agent_data.fields (publication, name, text_key) WHERE stating AND type = 'text';
-- The agent.fields view reads the rows of one namespace's collections.
CREATE INDEX IF NOT EXISTS fields_collection
    ON agent_data.fields (namespace, collection_id);
