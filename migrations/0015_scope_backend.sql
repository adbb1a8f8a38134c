-- A scope row is bound to the backend of the restricted session that runs it (issue 12): the
-- scope of a session needs the token, an unexpired row and the session's own backend pid, so a
-- token a template shows (``current_setting('cs.agent_scope')``) opens nothing on any other
-- session, and the row only has to be gone before its session runs anything else. Rows recorded
-- before this migration have no pid and match nothing; they expire and are deleted.
ALTER TABLE agent_data.scopes ADD COLUMN IF NOT EXISTS backend_pid integer;
ALTER TABLE agent_data.scopes DROP CONSTRAINT IF EXISTS scopes_backend_pid_given;
ALTER TABLE agent_data.scopes ADD CONSTRAINT scopes_backend_pid_given
    CHECK (backend_pid IS NOT NULL) NOT VALID;
-- no index on the pid: the return step's delete scans a table of a few live rows, and an index
-- would cost every run's insert

-- The same view (the four agent views bind its OID, so they follow), with the pid. Functions are
-- schema-qualified: a view binds function OIDs when it is created, so nothing a template's
-- session can do to its search_path changes which function runs.
CREATE OR REPLACE VIEW agent_data.run_collections WITH (security_barrier) AS
SELECT c.collection_id, c.type, c.revision, c.documents, c.passages, c.publication
  FROM agent_data.scopes s
  JOIN agent_data.collections c
    ON c.namespace = s.namespace AND c.collection_id = ANY (s.collections) AND c.usable
 WHERE s.token = pg_catalog.current_setting('cs.agent_scope', true)
   AND s.backend_pid = pg_catalog.pg_backend_pid()
   AND s.expires_at > pg_catalog.now();
