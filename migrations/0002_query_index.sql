-- The query index read model (query_index projection). Each published index replaces the
-- context's previous one; a deleted context has no rows. Rebuildable from position zero.
--
-- query_contexts: one row per live context; decides index validity (index revision equal to
--                 the current revision) and bounds the weights (for 32-bit scoring).
-- query_records:  the records of the latest index, numbered by id order (code points).
-- query_postings: per term and context, the record numbers containing the term and the term's
--                 weighted frequency there (3 x title + 2 x keywords + 1 x text), as parallel
--                 arrays. One row per (term, context) keeps the table small: a query reads one
--                 index entry per (term, candidate context) and makes one pass over the arrays.

CREATE TABLE IF NOT EXISTS query_contexts (
    stream_id        uuid PRIMARY KEY,
    namespace        text    NOT NULL,
    name             text    NOT NULL,
    type             text    NOT NULL,
    current_revision text    NOT NULL,
    index_revision   text,
    records          integer NOT NULL,
    max_weight       integer NOT NULL
);

-- id and source_context are the UTF-8 bytes of the record's strings (filters are exact string
-- membership, and a client may send any JSON string, NUL included, which text cannot hold).
CREATE TABLE IF NOT EXISTS query_records (
    stream_id      uuid    NOT NULL,
    ord            integer NOT NULL,
    id             bytea   NOT NULL,
    source_context bytea   NOT NULL,
    doc            text    NOT NULL,
    PRIMARY KEY (stream_id, ord)
);
CREATE INDEX IF NOT EXISTS query_records_id ON query_records (stream_id, id);
CREATE INDEX IF NOT EXISTS query_records_source ON query_records (stream_id, source_context);

CREATE TABLE IF NOT EXISTS query_postings (
    term      text      COLLATE "C" NOT NULL,
    stream_id uuid      NOT NULL,
    ords      integer[] NOT NULL,
    weights   integer[] NOT NULL,
    PRIMARY KEY (term, stream_id)
);
CREATE INDEX IF NOT EXISTS query_postings_stream ON query_postings (stream_id);
