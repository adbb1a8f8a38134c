-- Record ids and source contexts have no length limit (spec 5.1), and a btree entry cannot
-- exceed about 2,700 bytes: a plain index on them refused a long value, and the query index
-- projection, retrying the same batch, stopped every query. The indexes key their SHA-256
-- instead (always 32 bytes); the reads filter on the hash, through the index, and on the exact
-- value.
DROP INDEX IF EXISTS query_records_id;
DROP INDEX IF EXISTS query_records_source;
CREATE INDEX IF NOT EXISTS query_records_id_hash ON query_records (stream_id, sha256(id));
CREATE INDEX IF NOT EXISTS query_records_source_hash
    ON query_records (stream_id, sha256(source_context));

-- Document ids hold a record's id or file (no length limit, agent-context-api 5.2): the
-- documents of packs and of the agent schema, and the studied fields' document keys, are keyed
-- by their hash. The projections write each document once per publication; where the column
-- is bytea a unique index on the SHA-256 keeps that checked, agent_data.documents (text, whose
-- hash would need a non-immutable conversion) keeps a plain index.
ALTER TABLE agent_documents DROP CONSTRAINT IF EXISTS agent_documents_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS agent_documents_key
    ON agent_documents (publication, sha256(document_id));
ALTER TABLE agent_data.documents DROP CONSTRAINT IF EXISTS documents_pkey;
CREATE INDEX IF NOT EXISTS agent_data_documents_key
    ON agent_data.documents (publication, md5(document_id));
ALTER TABLE agent_data.field_documents DROP CONSTRAINT IF EXISTS field_documents_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS field_documents_key
    ON agent_data.field_documents (publication, sha256(document_key));
DROP INDEX IF EXISTS agent_data.fields_document;
CREATE INDEX IF NOT EXISTS fields_document_hash
    ON agent_data.fields (publication, name, sha256(document_key)) WHERE stating;

-- A text field value is at most 1,000 characters, up to 4,000 bytes. The text indexes keep
-- the first 1,024 bytes: byte order of the prefixes agrees with byte order of the values, so
-- the reads' comparisons and prefix ranges, restated on the prefix, still scan a range.
DROP INDEX IF EXISTS agent_data.fields_text;
DROP INDEX IF EXISTS agent_data.fields_text_lower;
CREATE INDEX IF NOT EXISTS fields_text_prefix
    ON agent_data.fields (publication, name, substring(text_key from 1 for 1024))
    WHERE stating AND type = 'text';
CREATE INDEX IF NOT EXISTS fields_text_lower_prefix
    ON agent_data.fields (publication, name, substring(text_lower from 1 for 1024))
    WHERE stating AND type = 'text';
