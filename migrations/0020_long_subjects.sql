-- Subjects have no length limit (a kind and a non-blank name, spec 2.1.6), and a btree entry
-- cannot exceed about 2,700 bytes: a grant or a membership of a long subject made the
-- projection writing it fail and retry the same batch for ever, and the catalog, the members or
-- collection admission stalled for every caller. As 0019 did for record ids, the keys hold the
-- subject's SHA-256 (always 32 bytes); the reads find the rows through the hash and compare the
-- exact subject. The grants keep their subjects as UTF-8 bytes, like the members (0006), so the
-- hash is of an immutable expression and the key stays unique.
ALTER TABLE context_grants DROP CONSTRAINT IF EXISTS context_grants_pkey;
DROP INDEX IF EXISTS context_grants_subject;
ALTER TABLE context_grants ALTER COLUMN subject TYPE bytea USING convert_to(subject, 'UTF8');
CREATE UNIQUE INDEX IF NOT EXISTS context_grants_key
    ON context_grants (stream_id, sha256(subject));
CREATE INDEX IF NOT EXISTS context_grants_subject_hash ON context_grants (sha256(subject));

ALTER TABLE workspace_members DROP CONSTRAINT IF EXISTS workspace_members_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS workspace_members_key
    ON workspace_members (namespace, sha256(subject));
-- the workspace picker finds a subject's workspaces
CREATE INDEX IF NOT EXISTS workspace_members_subject_hash ON workspace_members (sha256(subject));

ALTER TABLE collection_admission_members
    DROP CONSTRAINT IF EXISTS collection_admission_members_pkey;
CREATE UNIQUE INDEX IF NOT EXISTS collection_admission_members_key
    ON collection_admission_members (namespace, sha256(subject));
