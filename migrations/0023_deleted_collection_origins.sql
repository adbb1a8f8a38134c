-- Collection admission (agent-context-api §3.4 rule 5) for deleted collections: the bootstrap
-- administrator's time travel reads contexts deleted since its point (rule 2), and rule 5 holds
-- for them too. A deleted collection's origin is kept, with where it was deleted, instead of
-- being dropped. Contexts deleted before this migration have no origin, so they stay out of
-- that time travel (refused, never let in) until the view is rebuilt from the log
-- (`context-service projections rebuild collection_admission`).
ALTER TABLE collection_origins ADD COLUMN IF NOT EXISTS deleted_position bigint;
