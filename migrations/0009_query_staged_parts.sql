-- The parts of each context's open multi-part index upload (query_index projection), kept
-- until the upload's publication assembles them into the index; any publication, a new
-- revision or a deletion drops them. Rebuildable from position zero.
--
-- query_contexts.upload_revision / upload_id: the open upload the staged parts belong to
-- (NULL: none). query_staged_parts.records: the stored encoding of the part's records (a JSON
-- array of QueryRecord).
ALTER TABLE query_contexts ADD COLUMN IF NOT EXISTS upload_revision text;
ALTER TABLE query_contexts ADD COLUMN IF NOT EXISTS upload_id text;

CREATE TABLE IF NOT EXISTS query_staged_parts (
    stream_id uuid    NOT NULL,
    part      integer NOT NULL,
    records   bytea   NOT NULL,
    PRIMARY KEY (stream_id, part)
);
