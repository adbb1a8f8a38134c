-- Field plans pushed into PostgreSQL (agent-context-api 10.4).
--
-- The planner estimates a plan's joins from how many stating rows one field name has in one
-- publication. Those columns are strongly correlated (a name has one type per index and most
-- of its rows state it), which per-column statistics cannot see: the estimates came out ten
-- times too low and chose per-document index loops over hash joins. Extended statistics keep
-- the combinations. The studied-fields projection analyzes the table after large writes.
CREATE STATISTICS IF NOT EXISTS agent_data.fields_kind (mcv, dependencies)
    ON publication, name, type, stating FROM agent_data.fields;

-- prefix filters are byte ranges over the lowercased text
CREATE INDEX IF NOT EXISTS fields_text_lower
    ON agent_data.fields (publication, name, text_lower) WHERE stating AND type = 'text';
