-- Functions no query template may reach (issue 24), revoked from PUBLIC in this database as a
-- second line behind the registration check's allow-list: the restricted login then gets
-- ``permission denied`` even if that check were wrong. The list is a view, so the start-up check
-- of the sandbox reads the same list (``sandbox/checks.py``).
--
-- Kept executable on purpose: ``current_setting`` and ``pg_backend_pid`` (the agent views call
-- them on the restricted login), the ``pg_locks``/``pg_cursors``/``pg_prepared_statements``
-- readers (the pool's check of a new session), and the sequence functions (sequence privileges
-- already refuse them; column defaults call ``nextval`` as the writing login).
CREATE OR REPLACE VIEW agent_data.revoked_functions AS
SELECT p.oid::pg_catalog.regprocedure AS function, p.proname::text AS name
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
   AND (p.proname LIKE 'pg\_stat\_%'             -- statistics: others' activity and counters
        OR p.proname LIKE 'pg\_ls\_%'             -- directories
        OR p.proname LIKE 'pg\_read\_%'           -- files
        OR p.proname LIKE 'pg\_file\_%'
        OR p.proname LIKE 'lo\_%' OR p.proname IN ('loread', 'lowrite')  -- large objects
        OR p.proname LIKE '%advisory%'            -- advisory locks (the service's leadership)
        OR p.proname LIKE 'pg\_sleep%'
        OR p.proname ~ '^(query|cursor|table|schema|database)_to_xml'  -- dynamic SQL
        OR p.proname IN (
            'pg_show_all_settings', 'pg_show_all_file_settings', 'pg_settings_get_flags',
            'set_config',
            'pg_blocking_pids', 'pg_safe_snapshot_blocking_pids',
            'txid_current', 'txid_current_if_assigned', 'txid_current_snapshot', 'txid_status',
            'pg_current_xact_id', 'pg_current_xact_id_if_assigned', 'pg_current_snapshot',
            'pg_xact_status', 'pg_xact_commit_timestamp', 'pg_xact_commit_timestamp_origin',
            'pg_last_committed_xact', 'pg_get_multixact_members',
            'pg_database_size', 'pg_tablespace_size', 'pg_relation_size', 'pg_table_size',
            'pg_indexes_size', 'pg_total_relation_size', 'pg_notification_queue_usage',
            'pg_get_backend_memory_contexts', 'pg_get_shmem_allocations', 'pg_current_logfile'));

-- The service's own logins keep every one of them (leadership takes advisory locks, start-up
-- reads pg_stat_activity): the login migrating, the owner of the migrations table and the
-- database's owner. Only a superuser (the embedded server's login) can change these grants; for
-- any other login both statements are warnings and nothing changes, which the sandbox's start-up
-- check then reports.
DO $$
DECLARE
    f pg_catalog.regprocedure;
    grantee name;
BEGIN
    FOR f IN SELECT function FROM agent_data.revoked_functions ORDER BY 1 LOOP
        FOR grantee IN
            SELECT DISTINCT r FROM (VALUES
                (current_user::name),
                ((SELECT pg_catalog.pg_get_userbyid(datdba) FROM pg_catalog.pg_database
                   WHERE datname = pg_catalog.current_database())),
                ((SELECT pg_catalog.pg_get_userbyid(relowner) FROM pg_catalog.pg_class
                   WHERE oid = pg_catalog.to_regclass('schema_migrations')))) AS v(r)
             WHERE r IS NOT NULL
        LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %I', f, grantee);
        END LOOP;
        EXECUTE pg_catalog.format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
END
$$;
